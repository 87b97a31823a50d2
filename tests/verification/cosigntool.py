"""The real cosign (hack/tools/cosign.sh), run as a signer would run it offline: a private HOME
(no TUF cache, no config of the machine), key pairs from ``cosign generate-key-pair``, and
``sign --tlog-upload=false --use-signing-config=false`` (no Fulcio, no Rekor) against registries
on loopback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.tools import tool

PASSWORD = "interop-pass"


class Cosign:
    """Runs the real cosign with a private HOME (no TUF cache, no config of the machine)."""

    def __init__(self, home: Path) -> None:
        self.binary = tool("cosign")
        self.home = home
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "TUF_ROOT": str(home / "tuf"),
            "COSIGN_PASSWORD": PASSWORD,
            "COSIGN_YES": "true",
        }

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), *args],
            env=self.env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def key_pair(self, name: str) -> tuple[Path, Path]:
        done = self.run("generate-key-pair", "--output-key-prefix", str(self.home / name))
        assert done.returncode == 0, done.stderr
        return self.home / f"{name}.key", self.home / f"{name}.pub"

    def sign(self, image: str, key: Path, *extra: str, bundle: bool = False) -> None:
        args = [
            "sign",
            "--key",
            str(key),
            "--tlog-upload=false",
            "--use-signing-config=false",
            f"--new-bundle-format={'true' if bundle else 'false'}",
            "--allow-insecure-registry",
            "--yes",
            *extra,
            image,
        ]
        done = self.run(*args)
        assert done.returncode == 0, f"cosign {' '.join(args)}: {done.stderr}"
