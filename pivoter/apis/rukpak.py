"""rukpak-compatible ``core.rukpak.io/v1alpha1`` APIs: ``Bundle`` and ``BundleDeployment``.

Every field of rukpak v0.16 is here with its validation, so manifests written for rukpak apply
unchanged. pivoter's additions are optional fields only (a superset), marked "pivoter:" in their
descriptions.
"""

from __future__ import annotations

from pivoter.apis._schema import (
    DNS_LABEL,
    Schema,
    array,
    boolean,
    column,
    conditions,
    crd,
    free_form,
    integer,
    local_ref,
    obj,
    string,
)

GROUP = "core.rukpak.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

BUNDLE_NAME_MAX = 52
BUNDLE_DEPLOYMENT_NAME_MAX = 45

# Provisioner classes (rukpak's names).
CLASS_PLAIN = "core-rukpak-io-plain"
CLASS_REGISTRY = "core-rukpak-io-registry"
CLASS_HELM = "core-rukpak-io-helm"

# Source types.
SOURCE_IMAGE = "image"
SOURCE_GIT = "git"
SOURCE_HTTP = "http"
SOURCE_CONFIGMAPS = "configMaps"
SOURCE_UPLOAD = "upload"

# Bundle phases and condition.
PHASE_PENDING = "Pending"
PHASE_UNPACKING = "Unpacking"
PHASE_FAILING = "Failing"
PHASE_UNPACKED = "Unpacked"
TYPE_UNPACKED = "Unpacked"
REASON_UNPACK_PENDING = "UnpackPending"
REASON_UNPACKING = "Unpacking"
REASON_UNPACK_SUCCESSFUL = "UnpackSuccessful"
REASON_UNPACK_FAILED = "UnpackFailed"
REASON_PROCESSING_FINALIZER_FAILED = "ProcessingFinalizerFailed"

# BundleDeployment conditions and reasons.
TYPE_HAS_VALID_BUNDLE = "HasValidBundle"
TYPE_INSTALLED = "Installed"
TYPE_HEALTHY = "Healthy"
REASON_BUNDLE_LOAD_FAILED = "BundleLoadFailed"
REASON_CREATE_DYNAMIC_WATCH_FAILED = "CreateDynamicWatchFailed"
REASON_ERROR_GETTING_CLIENT = "ErrorGettingClient"
REASON_ERROR_GETTING_RELEASE_STATE = "ErrorGettingReleaseState"
REASON_HEALTHY = "Healthy"
REASON_INSTALLATION_STATUS_FALSE = "InstallationStatusFalse"
REASON_INSTALLATION_STATUS_UNKNOWN = "InstallationStatusUnknown"
REASON_INSTALLATION_SUCCEEDED = "InstallationSucceeded"
REASON_INSTALL_FAILED = "InstallFailed"
REASON_OBJECT_LOOKUP_FAILURE = "ObjectLookupFailure"
REASON_READING_CONTENT_FAILED = "ReadingContentFailed"
REASON_RECONCILE_FAILED = "ReconcileFailed"
REASON_UNHEALTHY = "Unhealthy"
REASON_UPGRADE_FAILED = "UpgradeFailed"

# Labels rukpak puts on generated Bundles and installed objects.
LABEL_OWNER_KIND = "core.rukpak.io/owner-kind"
LABEL_OWNER_NAME = "core.rukpak.io/owner-name"
LABEL_TEMPLATE_HASH = "core.rukpak.io/bundle-template-hash"


def _auth() -> Schema:
    return obj(
        "How to authenticate to the source, if it needs it.",
        {
            "secret": local_ref(
                "A Secret in the provisioner's namespace: `username`/`password` for http(s), "
                "`ssh-privatekey`/`ssh-knownhosts` for ssh."
            ),
            "insecureSkipVerify": boolean(
                "Accept any server certificate and host name. For testing only."
            ),
            "insecureSendCredentials": boolean(
                "pivoter: send the Secret's username/password over plain http to a host other "
                "than loopback (they travel unencrypted). Off: such a source is refused."
            ),
        },
    )


def bundle_spec() -> Schema:
    """The schema of ``Bundle.spec`` (also the ``template.spec`` of a BundleDeployment)."""
    git_ref = obj(
        "Which branch, tag or commit to check out; exactly one.",
        {
            "branch": string("A branch; the resolved commit is recorded in status."),
            "tag": string("A tag; the resolved commit is recorded in status."),
            "commit": string("A commit SHA."),
        },
        oneOf=[{"required": ["branch"]}, {"required": ["commit"]}, {"required": ["tag"]}],
    )
    source = obj(
        "Where the bundle's content comes from; exactly one of the source fields.",
        {
            "type": string("The kind of source: image, git, http, configMaps or upload."),
            "image": obj(
                "A container image holding the bundle's files.",
                {
                    "ref": string("Image reference, by tag or (preferably) by digest."),
                    "pullSecret": string(
                        "Name of an image pull Secret in the provisioner's namespace."
                    ),
                    "insecureSkipTLSVerify": boolean(
                        "pivoter: accept any registry certificate. For testing only."
                    ),
                    "certificateData": string(
                        "pivoter: PEM certificate authorities to trust for this registry."
                    ),
                },
                required=["ref"],
            ),
            "git": obj(
                "A git repository holding the bundle's files.",
                {
                    "repository": string("URL of the repository (https or ssh)."),
                    "directory": string(
                        "Directory of the bundle within the repository (default ./manifests)."
                    ),
                    "ref": git_ref,
                    "auth": _auth(),
                },
                required=["ref", "repository"],
            ),
            "http": obj(
                "A tar.gz of the bundle's files served over http(s).",
                {"url": string("URL of the tarball."), "auth": _auth()},
                required=["url"],
            ),
            "configMaps": array(
                "Immutable ConfigMaps in the provisioner's namespace, each mapped to a path.",
                obj(
                    "One ConfigMap and the directory its keys become files in.",
                    {
                        "configMap": local_ref("The ConfigMap."),
                        "path": string("Directory within the bundle (relative)."),
                    },
                    required=["configMap"],
                ),
            ),
            "upload": obj("Content uploaded to the provisioner (rukpak's upload service).", {}),
        },
        required=["type"],
        oneOf=[
            {"required": ["git"]},
            {"required": ["image"]},
            {"required": ["configMaps"]},
            {"required": ["http"]},
            {"required": ["upload"]},
        ],
    )
    return obj(
        "The desired content of a Bundle.",
        {
            "provisionerClassName": string(
                "The provisioner that unpacks this bundle.", pattern=DNS_LABEL
            ),
            "source": source,
            "watchNamespaces": array(
                "Namespaces the operator in this bundle should watch.", string("A namespace.")
            ),
        },
        required=["provisionerClassName", "source"],
    )


def _resolved_source() -> Schema:
    return obj(
        "The exact content unpacked: the image digest or the git commit.",
        {
            "type": string("The kind of source."),
            "image": obj("The image by digest.", {"ref": string("Digest reference.")}),
            "git": obj(
                "The repository at a commit.",
                {
                    "repository": string("URL of the repository."),
                    "directory": string("Directory within it."),
                    "ref": obj("The commit.", {"commit": string("Commit SHA.")}),
                },
            ),
            "http": obj("The URL fetched.", {"url": string("URL.")}),
            "configMaps": array(
                "The ConfigMaps used.",
                obj(
                    "One ConfigMap.",
                    {"configMap": local_ref("The ConfigMap."), "path": string("Path.")},
                ),
            ),
            "upload": obj("Uploaded content.", {}),
        },
    )


def bundle_crd() -> Schema:
    """The ``bundles.core.rukpak.io`` CRD."""
    status = obj(
        "What the provisioner observed about this bundle.",
        {
            "phase": string("Pending, Unpacking, Failing or Unpacked."),
            "resolvedSource": _resolved_source(),
            "observedGeneration": integer("The generation last processed."),
            "conditions": conditions(),
            "contentURL": string("Where the unpacked content is served to authorized readers."),
            "digest": string("pivoter: digest of the unpacked content in the content store."),
        },
    )
    return crd(
        group=GROUP,
        kind="Bundle",
        plural="bundles",
        version=VERSION,
        spec=bundle_spec(),
        status=status,
        max_name_length=BUNDLE_NAME_MAX,
        description="A Bundle is an immutable reference to installable content.",
        printer_columns=[
            column("Type", ".spec.source.type"),
            column("Phase", ".status.phase"),
            column("Age", ".metadata.creationTimestamp", "date"),
            column("Provisioner", ".spec.provisionerClassName", priority=1),
            column("Resolved Source", ".status.resolvedSource", priority=1),
        ],
    )


def bundle_deployment_crd() -> Schema:
    """The ``bundledeployments.core.rukpak.io`` CRD."""
    template = obj(
        "The Bundle to generate and install; a change of template is a pivot.",
        {
            "metadata": free_form("Labels and annotations for the generated Bundle."),
            "spec": bundle_spec(),
        },
        required=["spec"],
    )
    spec = obj(
        "The bundle to install and how.",
        {
            "provisionerClassName": string(
                "The provisioner that installs the bundle.", pattern=DNS_LABEL
            ),
            "template": template,
            "config": free_form("Provisioner-specific configuration (e.g. helm values)."),
            "serviceAccount": obj(
                "pivoter: the service account whose permissions install the bundle "
                "(impersonated). Without it the creator must be allowed everything pivoter can "
                "do.",
                {"name": string("Service account name."), "namespace": string("Its namespace.")},
                required=["name", "namespace"],
            ),
            "driftPolicy": string(
                "pivoter: Correct restores managed objects edited or deleted by hand; Report "
                "only reports them.",
                enum=["Correct", "Report"],
                default="Correct",
            ),
            "adoptExisting": boolean(
                "pivoter: take over objects that already exist and are managed by someone else "
                "(default false: refuse with a condition)."
            ),
            "crdDeletionPolicy": string(
                "pivoter: on deletion, Keep a CRD that still has custom resources (default) or "
                "Delete it with them.",
                enum=["Keep", "Delete"],
                default="Keep",
            ),
            "preflight": obj(
                "pivoter: checks before an upgrade is applied.",
                {
                    "crdUpgradeSafety": obj(
                        "Refuse CRD changes that would break stored custom resources.",
                        {"disabled": boolean("Turn the check off.")},
                    )
                },
            ),
        },
        required=["provisionerClassName", "template"],
    )
    status = obj(
        "What the provisioner observed about this deployment.",
        {
            "conditions": conditions(),
            "activeBundle": string("The Bundle whose content is installed now."),
            "observedGeneration": integer("The generation last processed."),
            "inventory": array(
                "pivoter: the objects the active bundle installed (a pivot prunes what the new "
                "content no longer has).",
                obj(
                    "One installed object.",
                    {
                        "apiVersion": string("Its apiVersion."),
                        "kind": string("Its kind."),
                        "namespace": string("Its namespace; empty when cluster-scoped."),
                        "name": string("Its name."),
                    },
                    required=["apiVersion", "kind", "name"],
                ),
            ),
        },
    )
    return crd(
        group=GROUP,
        kind="BundleDeployment",
        plural="bundledeployments",
        version=VERSION,
        spec=spec,
        status=status,
        short_names=["bd", "bds"],
        max_name_length=BUNDLE_DEPLOYMENT_NAME_MAX,
        description="A BundleDeployment installs the content of a Bundle and pivots on change.",
        printer_columns=[
            column("Active Bundle", ".status.activeBundle"),
            column("Install State", '.status.conditions[?(@.type=="Installed")].reason'),
            column("Age", ".metadata.creationTimestamp", "date"),
            column("Provisioner", ".spec.provisionerClassName", priority=1),
        ],
    )
