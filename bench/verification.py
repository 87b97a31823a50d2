"""Benchmark: what verifying a bundle image's cosign signatures costs, against the pull itself
(issue 31).

A pull with a verification policy (``ImageSpec.verification``) checks the top manifest's
signatures right after ``open_image`` resolved it and before any layer is fetched
(docs/verification.md). That check is extra registry round trips (the ``sha256-<hex>.sig`` tag,
the referrers listing, the signature manifest and its blob) plus local work (JSON, base64, the
ECDSA check, for a certificate its chain). This bench says how much, per bundle, next to the pull
it guards. Everything is real:

- a distribution registry on loopback (``tests.provisioners.servers.run_registry``), holding
  the ten real registry+v1 bundles of ``tests/data/bundles/registry-v1`` (each as a one-layer
  gzip image, its ``manifests/`` and ``metadata/``) and one synthetic bundle of
  ``--synthetic-megabytes`` (default 20) of manifests;
- each image signed by the real cosign (``tests.verification.cosigntool.Cosign``, offline: a key
  pair of ``cosign generate-key-pair``, no Fulcio, no Rekor) in both storage formats, each on
  its own repository: the ``.sig`` tag (``--new-bundle-format=false``) and the Sigstore bundle
  referrer (cosign v3's default); and, unless ``--skip-certificates``, both again with a
  code-signing certificate for that key issued by a CA made here (verified by identity and
  issuer through the chain, not by key).

Per image and signing variant, for each of ``--runs`` runs (the three steps interleaved, every
pull into a fresh directory, images referenced by digest as catalogs pin them):

1. **pull**: ``ImageSource().fetch(ImageSpec(ref), dest, FetchOptions())``;
2. **verify**: ``open_image`` (not timed), then ``verify_opened(image, opened, policy)`` timed,
   and the registry requests it made (every ``HttpClient.request`` counted);
3. **pull + verify**: the same fetch with ``ImageSpec(ref, verification=policy)``.

And the **offline** part of the verification: ``verify_image`` over a store that replays, from
memory, what the registry answered in step 2 (so everything but the network: reading the
envelopes, the certificate path, the signature math), median of 20 calls.

Usage: python bench/verification.py [--runs 5] [--synthetic-megabytes 20] [--skip-certificates]
Prints Markdown tables (medians) for docs/benchmarks/verification.md; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier  # noqa: E402

from provisioners.httpclient import HttpClient, TlsOptions  # noqa: E402
from provisioners.registries import RegistryAccess, open_image  # noqa: E402
from provisioners.registries.reference import ImageReference, parse_reference  # noqa: E402
from provisioners.sources import FetchOptions, ImageSpec  # noqa: E402
from provisioners.sources.image import ImageSource  # noqa: E402
from provisioners.verification import (  # noqa: E402
    IdentityMatch,
    RegistrySignatureStore,
    SignatureStore,
    SignatureVerified,
    TrustedIdentity,
    TrustedKey,
    VerificationMode,
    VerificationPolicy,
    verify_image,
    verify_opened,
)
from provisioners.verification.discovery import ReferrersPage, StoredManifest  # noqa: E402
from tests.provisioners.oci import LAYER_GZIP, Entry, Pusher, compress, file, tar_bytes  # noqa: E402
from tests.provisioners.servers import Registry, run_registry  # noqa: E402
from tests.verification.cosigntool import Cosign  # noqa: E402

T = TypeVar("T")
BUNDLES = ROOT / "tests" / "data" / "bundles" / "registry-v1"
ISSUER = "https://oidc.example.com"
SUBJECT = "release@example.com"
OFFLINE_CALLS = 20
TIMEOUT, DEADLINE = 30.0, 600.0
KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


# -- the images ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BundleImage:
    """One bundle as a one-layer image: its name, the gzip layer and what it unpacks to."""

    name: str
    layer: bytes
    content_bytes: int
    files: int


def real_bundle(package: Path) -> BundleImage:
    """The bundle of ``package`` (its one version directory) with the layout an operator-sdk
    bundle image has: ``manifests/`` and ``metadata/`` at the root."""
    version = next(v for v in sorted(package.iterdir()) if (v / "manifests").is_dir())
    entries: list[Entry] = []
    for path in sorted(p for p in version.rglob("*") if p.is_file()):
        entries.append(file(path.relative_to(version).as_posix(), path.read_bytes()))
    content = sum(len(e.data) for e in entries)
    layer = compress(tar_bytes(entries), LAYER_GZIP)
    return BundleImage(f"{package.name} {version.name}", layer, content, len(entries))


def synthetic_bundle(megabytes: int, seed: int = 31) -> BundleImage:
    """A bundle of about ``megabytes`` MB: 40 ConfigMap manifests of random base64 text (which
    gzip shrinks to about three quarters, so the layer stays large) and the annotations file."""
    randomness = random.Random(seed)
    per_file = (megabytes * 1_000_000) // 40
    entries = [
        file(
            "metadata/annotations.yaml",
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n",
        )
    ]
    for number in range(40):
        # base64 is 4/3 of the bytes; the indented 76-column lines add 5 bytes in 81.
        text = base64.b64encode(randomness.randbytes(per_file * 3 // 4 * 76 // 81)).decode()
        lines = "\n".join(f"    {text[i : i + 76]}" for i in range(0, len(text), 76))
        entries.append(
            file(
                f"manifests/data-{number:02d}.configmap.yaml",
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data-{number:02d}\n"
                f"data:\n  blob: |\n{lines}\n",
            )
        )
    content = sum(len(e.data) for e in entries)
    layer = compress(tar_bytes(entries), LAYER_GZIP)
    return BundleImage(f"synthetic {content / 1e6:.0f} MB", layer, content, len(entries))


# -- signing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """How an image is signed: the storage format and whether a certificate carries the key."""

    bundle: bool
    certificate: bool

    @property
    def slug(self) -> str:
        """The repository prefix of the images signed this way."""
        return f"{'bundle' if self.bundle else 'sig'}-{'cert' if self.certificate else 'key'}"

    @property
    def storage(self) -> str:
        """The storage format, as docs/verification.md names it."""
        return "Sigstore bundle referrer" if self.bundle else "`.sig` tag"

    @property
    def signer(self) -> str:
        """What the policy trusts."""
        return "certificate (CA, identity)" if self.certificate else "key"


@dataclass(frozen=True)
class Signing:
    """The key pair cosign signs with, its certificate files, and the policy of each variant."""

    private: Path
    certificate_args: tuple[str, ...]
    key_policy: VerificationPolicy
    identity_policy: VerificationPolicy

    def policy(self, variant: Variant) -> VerificationPolicy:
        """The policy that verifies images signed as ``variant``."""
        return self.identity_policy if variant.certificate else self.key_policy


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def company_ca(public_pem: bytes, directory: Path) -> tuple[x509.Certificate, Path, Path]:
    """A P-384 CA, and a code-signing leaf it issues for the cosign key (the subject an email,
    the OIDC issuer in Fulcio's extension 1.3.6.1.4.1.57264.1.8); the leaf and chain files."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    usage = dict.fromkeys(KEY_USAGES, False)
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("bench signing CA"))
        .issuer_name(_name("bench signing CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(**{**usage, "key_cert_sign": True, "crl_sign": True}), critical=True
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA384())
    )
    public = serialization.load_pem_public_key(public_pem)
    assert isinstance(public, ec.EllipticCurvePublicKey)
    issuer = ISSUER.encode()
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(ca.subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(SUBJECT)]), critical=True)
        .add_extension(x509.KeyUsage(**{**usage, "digital_signature": True}), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(  # a DER UTF8String: tag 0x0c, short length
            x509.UnrecognizedExtension(
                ObjectIdentifier("1.3.6.1.4.1.57264.1.8"), bytes([0x0C, len(issuer)]) + issuer
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA384())
    )
    leaf_file, chain_file = directory / "release.crt", directory / "chain.crt"
    leaf_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    chain_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return ca, leaf_file, chain_file


def prepare_signing(cosign: Cosign) -> Signing:
    """A cosign key pair, a certificate for it, and the two policies."""
    private, public = cosign.key_pair("release")
    key = TrustedKey.from_pem(public.read_bytes(), name=public.name)
    ca, leaf_file, chain_file = company_ca(public.read_bytes(), cosign.home)
    identity = TrustedIdentity(
        (ca,), IdentityMatch(exact=SUBJECT), IdentityMatch(exact=ISSUER), name="bench CA"
    )
    return Signing(
        private=private,
        certificate_args=("--certificate", str(leaf_file), "--certificate-chain", str(chain_file)),
        key_policy=VerificationPolicy.keyed(
            VerificationMode.ENFORCE, keys=[key], name="bench key policy"
        ),
        identity_policy=VerificationPolicy.keyed(
            VerificationMode.ENFORCE, identities=[identity], name="bench identity policy"
        ),
    )


# -- measuring -------------------------------------------------------------------------------


class RequestCounter:
    """Counts every request a pull's HTTP client sends, and logs its method, path and status
    (wraps ``HttpClient.request`` while the bench runs; the product is not changed)."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self._original: Callable[..., Any] = HttpClient.request

    @property
    def count(self) -> int:
        """Requests sent so far."""
        return len(self.log)

    @contextmanager
    def installed(self) -> Iterator[RequestCounter]:
        """Count requests inside the block."""
        original = self._original

        def counting(client: HttpClient, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            response = original(client, method, url, *args, **kwargs)
            self.log.append(f"{method} {urlsplit(url).path} -> {response.status}")
            return response

        HttpClient.request = counting  # type: ignore[method-assign,assignment]
        try:
            yield self
        finally:
            HttpClient.request = original  # type: ignore[method-assign]


@dataclass
class ReplayStore:
    """A :class:`SignatureStore` that answers from what a real store answered (recorded by
    :class:`RecordingStore`): verification without the network."""

    manifests: dict[str, StoredManifest | None] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    pages: dict[str | None, ReferrersPage | None] = field(default_factory=dict)

    def manifest(self, ref: str, *, limit: int, max_depth: int) -> StoredManifest | None:
        return self.manifests[ref]

    def blob(self, digest: str, size: int) -> bytes:
        return self.blobs[digest]

    def referrers(
        self, digest: str, *, page: str | None, limit: int, max_depth: int
    ) -> ReferrersPage | None:
        return self.pages[page]

    def deadline_left(self) -> float:
        return DEADLINE


@dataclass
class RecordingStore:
    """A :class:`SignatureStore` passing every call to ``inner`` and keeping the answers."""

    inner: SignatureStore
    replay: ReplayStore = field(default_factory=ReplayStore)

    def manifest(self, ref: str, *, limit: int, max_depth: int) -> StoredManifest | None:
        answer = self.inner.manifest(ref, limit=limit, max_depth=max_depth)
        self.replay.manifests[ref] = answer
        return answer

    def blob(self, digest: str, size: int) -> bytes:
        answer = self.inner.blob(digest, size)
        self.replay.blobs[digest] = answer
        return answer

    def referrers(
        self, digest: str, *, page: str | None, limit: int, max_depth: int
    ) -> ReferrersPage | None:
        answer = self.inner.referrers(digest, page=page, limit=limit, max_depth=max_depth)
        self.replay.pages[page] = answer
        return answer

    def deadline_left(self) -> float:
        return self.inner.deadline_left()


@dataclass
class Samples:
    """The runs of one image signed one way (milliseconds; requests per step)."""

    pull: list[float] = field(default_factory=list)
    verify: list[float] = field(default_factory=list)
    verified_pull: list[float] = field(default_factory=list)
    offline: list[float] = field(default_factory=list)
    pull_requests: int = 0
    verify_requests: int = 0
    verify_log: list[str] = field(default_factory=list)
    """The requests of the last verification, in order."""


@dataclass
class Bench:
    """The registry, the pushed images and what measuring needs."""

    registry: Registry
    work: Path
    signing: Signing
    counter: RequestCounter
    digests: dict[tuple[Variant, str], str] = field(default_factory=dict)
    _pulls: int = 0

    def ref(self, variant: Variant, image: BundleImage) -> str:
        """The pinned reference of ``image`` in ``variant``'s repository."""
        return (
            f"{self.registry.host}/{repository(variant, image)}@{self.digests[variant, image.name]}"
        )

    def fetch(self, ref: str, policy: VerificationPolicy | None) -> tuple[float, int]:
        """One pull into a fresh directory: (milliseconds, requests)."""
        self._pulls += 1
        dest = self.work / "pulls" / str(self._pulls)
        dest.mkdir(parents=True)
        before = self.counter.count
        start = time.perf_counter()
        result = ImageSource().fetch(ImageSpec(ref, verification=policy), dest, FetchOptions())
        elapsed = (time.perf_counter() - start) * 1000
        requests = self.counter.count - before
        if policy is not None:
            assert isinstance(result.verification, SignatureVerified), result.verification
        shutil.rmtree(dest)
        return elapsed, requests

    def verify(self, ref: str, policy: VerificationPolicy) -> tuple[float, list[str], ReplayStore]:
        """``verify_opened`` on a freshly opened image: (milliseconds, its requests, the
        answers)."""
        image = parse_reference(ref)
        opened = open_image(
            image, RegistryAccess(), tls=TlsOptions(), timeout=TIMEOUT, deadline=DEADLINE
        )
        before = self.counter.count
        start = time.perf_counter()
        result = verify_opened(image, opened, policy)
        elapsed = (time.perf_counter() - start) * 1000
        requests = self.counter.log[before:]
        assert isinstance(result, SignatureVerified), result
        recording = RecordingStore(RegistrySignatureStore(opened.client, opened.place.reference))
        again = verify_image(image, opened.top.digest, recording, policy)
        assert isinstance(again, SignatureVerified), again
        return elapsed, requests, recording.replay


def repository(variant: Variant, image: BundleImage) -> str:
    """The repository of ``image`` signed as ``variant``."""
    return f"{variant.slug}/{image.name.split()[0]}"


def offline_ms(
    image: ImageReference, digest: str, replay: ReplayStore, policy: VerificationPolicy
) -> float:
    """Median milliseconds of ``verify_image`` over the replayed answers."""
    times = []
    for _ in range(OFFLINE_CALLS):
        start = time.perf_counter()
        result = verify_image(image, digest, replay, policy)
        times.append((time.perf_counter() - start) * 1000)
        assert isinstance(result, SignatureVerified), result
    return statistics.median(times)


def measure(bench: Bench, variant: Variant, image: BundleImage, runs: int) -> Samples:
    """The three steps, interleaved, ``runs`` times (module docstring)."""
    samples = Samples()
    ref = bench.ref(variant, image)
    policy = bench.signing.policy(variant)
    bench.fetch(ref, policy)  # warm the registry's caches for this repository
    for _ in range(runs):
        elapsed, samples.pull_requests = bench.fetch(ref, None)
        samples.pull.append(elapsed)
        elapsed, samples.verify_log, replay = bench.verify(ref, policy)
        samples.verify_requests = len(samples.verify_log)
        samples.verify.append(elapsed)
        samples.offline.append(
            offline_ms(parse_reference(ref), bench.digests[variant, image.name], replay, policy)
        )
        elapsed, _ = bench.fetch(ref, policy)
        samples.verified_pull.append(elapsed)
    return samples


# -- reporting -------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    """The median (of the runs, or of the images' medians)."""
    return statistics.median(values)


def machine() -> str:
    """Cores, memory and Python of this machine."""
    memory = ""
    try:
        with open("/proc/meminfo") as meminfo:
            kib = int(next(line for line in meminfo if line.startswith("MemTotal")).split()[1])
        memory = f", {kib / (1 << 20):.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    return (
        f"{platform.machine()}, {os.cpu_count()} cores{memory}, Python {platform.python_version()}"
    )


def commit() -> str:
    """The checkout's short commit (``git rev-parse --short HEAD``)."""
    try:
        short = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return short


def summary_table(
    results: dict[tuple[Variant, str], Samples], variants: list[Variant], real: list[str]
) -> list[str]:
    """Per signing variant: the medians over the real bundles' medians."""
    lines = [
        "| storage | trusted | requests: pull | verification adds | verify ms | of which "
        "offline ms | pull ms | pull + verify ms | verify ÷ pull |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant in variants:
        rows = [results[variant, name] for name in real]
        verify = median([median(r.verify) for r in rows])
        pull = median([median(r.pull) for r in rows])
        lines.append(
            f"| {variant.storage} | {variant.signer} | {rows[0].pull_requests} | "
            f"{rows[0].verify_requests} | {verify:.1f} | "
            f"{median([median(r.offline) for r in rows]):.2f} | {pull:.1f} | "
            f"{median([median(r.verified_pull) for r in rows]):.1f} | {verify / pull:.2f} |"
        )
    return lines


def image_table(
    results: dict[tuple[Variant, str], Samples],
    variants: list[Variant],
    images: list[BundleImage],
) -> list[str]:
    """Per image: the pull and, per variant, verify ms (its ratio to that repository's pull)."""
    head = "| bundle | files | content KB | layer KB | pull ms |"
    rule = "|---|---|---|---|---|"
    for variant in variants:
        head += f" {variant.storage}, {variant.signer}: verify ms (÷ pull) |"
        rule += "---|"
    lines = [head, rule]
    for image in images:
        pulls = [median(results[v, image.name].pull) for v in variants]
        row = (
            f"| {image.name} | {image.files} | {image.content_bytes / 1000:.0f} | "
            f"{len(image.layer) / 1000:.0f} | {median(pulls):.1f} |"
        )
        for variant in variants:
            samples = results[variant, image.name]
            verify = median(samples.verify)
            row += f" {verify:.1f} ({verify / median(samples.pull):.2f}) |"
        lines.append(row)
    return lines


def placeholders(entry: str, repo: str, digest: str) -> str:
    """A logged request with the repository, the image's digest (and its tag form) and any
    other digest (a signature's) written as placeholders."""
    entry = entry.replace(repo, "/v2/<repo>/").replace(digest, "<digest>")
    entry = entry.replace(digest.replace(":", "-"), "sha256-<hex>")
    return re.sub(r"sha256:[0-9a-f]{64}", "<signature>", entry)


def requests_table(
    results: dict[tuple[Variant, str], Samples],
    variants: list[Variant],
    bench_digests: dict[tuple[Variant, str], str],
    image: BundleImage,
) -> list[str]:
    """What one verification asks the registry, per variant (the image's repository and digest
    written as placeholders)."""
    lines = ["| storage | trusted | requests of one verification |", "|---|---|---|"]
    for variant in variants:
        digest = bench_digests[variant, image.name]
        repo = f"/v2/{repository(variant, image)}/"
        shown = [
            "`" + placeholders(entry, repo, digest) + "`"
            for entry in results[variant, image.name].verify_log
        ]
        lines.append(f"| {variant.storage} | {variant.signer} | {'<br>'.join(shown)} |")
    return lines


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--synthetic-megabytes", type=int, default=20)
    parser.add_argument(
        "--skip-certificates", action="store_true", help="sign with the key only (2 variants)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Push, sign, measure and print the tables."""
    args = parse_args(argv)
    started = time.perf_counter()
    images = [real_bundle(p) for p in sorted(BUNDLES.iterdir()) if p.is_dir()]
    real = [image.name for image in images]
    images.append(synthetic_bundle(args.synthetic_megabytes))
    variants = [
        Variant(bundle=bundle, certificate=certificate)
        for certificate in ((False,) if args.skip_certificates else (False, True))
        for bundle in (False, True)
    ]
    work = Path(tempfile.mkdtemp(prefix="pivoter-bench-verification-"))
    results: dict[tuple[Variant, str], Samples] = {}
    digests: dict[tuple[Variant, str], str] = {}
    try:
        with run_registry(work / "registry") as registry:
            cosign_home = work / "cosign"
            cosign_home.mkdir()
            cosign = Cosign(cosign_home)
            signing = prepare_signing(cosign)
            bench = Bench(registry, work, signing, RequestCounter(), digests)
            pusher = Pusher(registry.base)
            sign_seconds = []
            for variant in variants:
                print(f"pushing and signing: {variant.slug}", file=sys.stderr)
                for image in images:
                    repo = repository(variant, image)
                    digest = pusher.image(repo, "v1", [image.layer])
                    bench.digests[variant, image.name] = digest
                    extra = signing.certificate_args if variant.certificate else ()
                    start = time.perf_counter()
                    cosign.sign(
                        f"{registry.host}/{repo}@{digest}",
                        signing.private,
                        *extra,
                        bundle=variant.bundle,
                    )
                    sign_seconds.append(time.perf_counter() - start)
            with bench.counter.installed():
                for variant in variants:
                    print(f"measuring: {variant.slug}", file=sys.stderr)
                    for image in images:
                        results[variant, image.name] = measure(bench, variant, image, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    synthetic = images[-1].name
    print(
        f"commit {commit()}; {machine()}; registry: distribution on loopback (plain http); "
        f"medians of {args.runs} runs; cosign sign: {median(sign_seconds):.2f} s per image "
        f"(not in any figure); whole run {time.perf_counter() - started:.0f} s\n"
    )
    print("The ten real registry+v1 bundles (medians over the ten bundles' medians):\n")
    print("\n".join(summary_table(results, variants, real)) + "\n")
    print(f"The {synthetic} bundle:\n")
    print("\n".join(summary_table(results, variants, [synthetic])) + "\n")
    print(f"The requests of one verification ({images[0].name}):\n")
    print("\n".join(requests_table(results, variants, digests, images[0])) + "\n")
    print("Per bundle:\n")
    print("\n".join(image_table(results, variants, images)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
