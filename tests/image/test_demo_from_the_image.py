"""Step 2 of issue 17: the demo's flow against pivoter running from its image, as a Pod runs it.

``hack/demo.sh --image`` starts its own control plane, applies deploy/'s namespace, service account
and RBAC, and runs the image with podman (``hack/image/run.sh``): in-cluster configuration from a
TokenRequest token, the cluster CA and the namespace mounted where Kubernetes mounts them, no
kubeconfig, deploy/'s securityContext. Then the demo's flow runs unchanged: a BundleDeployment and
its pivot, the admission webhook refusing a change, a catalog served from the host, a Resolution
with a dependency, an upgrade, a grouped rollback; OLM v1's APIs served by the container (a
ClusterCatalog unpacked from a catalog image, a ClusterExtension installed as its service account
with a dependency, a broken upgrade rolled back as a group); ``catalog test --live``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.image.images import REPO, BuiltImage

pytestmark = [pytest.mark.cluster, pytest.mark.tools, pytest.mark.slow, pytest.mark.timeout(1800)]

SERVICE_ACCOUNT = "system:serviceaccount:pivoter-system:pivoter"


def test_the_demo_passes_with_pivoter_running_from_the_image(
    built_image: BuiltImage, tmp_path: Path
) -> None:
    demo_dir = tmp_path / "demo"
    result = subprocess.run(
        [str(REPO / "hack" / "demo.sh"), "--image", built_image.tag],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "PIVOTER_DEMO_DIR": str(demo_dir)},
        stdin=subprocess.DEVNULL,
    )
    log = (demo_dir / "pivoter.log").read_text(errors="replace")
    assert result.returncode == 0, (
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}\n{log[-3000:]}"
    )
    out = result.stdout
    # The daemon that did the work is the container (its hostname is in the Lease holder).
    holder = re.search(r"(\S+) now holds the lease pivoter-system/pivoter-leader", log)
    assert holder is not None, log[-3000:]
    assert holder.group(1).startswith("pivoter-demo_")
    assert f"from the image {built_image.tag} (podman)" in out
    # Its writes went through deploy/'s RBAC as the service account, and none was refused.
    assert f"by {SERVICE_ACCOUNT}: allowed" in log
    assert not re.search(rf'"{re.escape(SERVICE_ACCOUNT)}" cannot \w+ resource', log), log
    # The flow: a pivot, the webhook's refusal, a dependency, an upgrade, the grouped rollback.
    assert "registry.example/greeter:2.0.0" in out
    assert 'admission webhook "vbundles.core.rukpak.io" denied the request' in out
    assert "greeter@1.1.0, greeter-db@1.0.0" in out
    assert "failed (RolledBack: greeter.v1.2.0)" in out
    assert "the path was not walked: step 3 (1.2.0) ended RolledBack" in out
    # OLM v1's APIs, served by the container: the dependency installed with the package, and the
    # broken upgrade that had moved both rolled back as one group.
    assert "OLM v1 APIs: served" in out
    assert "selected guestbook-store 1.0.0" in out
    history = re.search(
        r"^r1 .*active, last successful\n.*guestbook@1\.0\.0, guestbook-store@1\.0\.0\n.*\n"
        r"r2 .*failed \(RolledBack: guestbook\.v1\.1\.0\)\n"
        r".*guestbook@1\.1\.0, guestbook-store@1\.1\.0$",
        out,
        re.MULTILINE,
    )
    assert history is not None, out[-3000:]
    # SIGTERM reached pivoter through podman: a graceful shutdown released the Lease.
    assert "released lease pivoter-system/pivoter-leader.pivoter.io" in log
