"""pivoter's own ``pivoter.io/v1alpha1`` APIs: ``Catalog`` and ``Resolution``.

A Catalog says where package metadata comes from; a Resolution says which packages should be
installed from the Catalogs it selects. Each new selection of bundles becomes a ResolveSet
(an immutable ConfigMap) that is installed as one grouped pivot.
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

GROUP = "pivoter.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

DEFAULT_POLL_INTERVAL = "10m"
DEFAULT_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600

# Catalog conditions.
TYPE_SERVING = "Serving"

# Resolution conditions.
TYPE_RESOLVED = "Resolved"
TYPE_PROGRESSING = "Progressing"
TYPE_INSTALLED = "Installed"
TYPE_HEALTHY = "Healthy"
TYPE_READY = "Ready"
TYPE_UP_TO_DATE = "UpToDate"
"""True when nothing newer is offered for the requested packages; else the newest bundle not
taken and why (shared with PlatformOperators)."""

DURATION = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"


def shared_dependencies() -> Schema:
    """``status.sharedDependencies`` of an input (every input kind)."""
    return array(
        "pivoter: bundles other inputs install that this input's selection depends on (a shared "
        "dependency is installed once, by the input that selected it first).",
        obj(
            "One shared dependency.",
            {
                "package": string("Package."),
                "version": string("Version installed."),
                "bundle": string("Bundle name."),
                "providedBy": string("The input that installs it, Kind/name."),
                "requiredBy": array(
                    "This input's packages that require it.", string("A package name.")
                ),
            },
        ),
    )


def catalog_crd() -> Schema:
    """The ``catalogs.pivoter.io`` CRD."""
    source = obj(
        "Where the catalog's content comes from; exactly one of the source fields.",
        {
            "type": string("The kind of source.", enum=["grpc", "http", "image", "configMaps"]),
            "grpc": obj(
                "An operator-registry api.Registry server (opm serve, a CatalogSource pod).",
                {"address": string("host:port of the registry server.")},
                required=["address"],
            ),
            "http": obj(
                "A catalogd-style HTTP server; <url>/api/v1/all is read.",
                {
                    "url": string("Base URL, e.g. https://catalogd.example/catalogs/operators."),
                    "caConfigMap": local_ref(
                        "A ConfigMap in pivoter's namespace whose `ca.crt` is trusted."
                    ),
                    "tokenSecret": local_ref(
                        "A Secret in pivoter's namespace whose `token` is sent as a bearer token."
                    ),
                    "insecureSendToken": boolean(
                        "Send the token over plain http to a host other than loopback (it "
                        "travels unencrypted). Off: such a source is refused; use https."
                    ),
                },
                required=["url"],
            ),
            "image": obj(
                "An OCI image holding an FBC directory (the directory is named by the label "
                "operators.operatorframework.io.index.configs.v1).",
                {
                    "ref": string("Image reference."),
                    "pullSecret": string("Image pull Secret in pivoter's namespace."),
                },
                required=["ref"],
            ),
            "configMaps": array(
                "ConfigMaps in pivoter's namespace whose keys are FBC files.",
                local_ref("A ConfigMap."),
                minItems=1,
            ),
        },
        required=["type"],
        oneOf=[
            {"required": ["grpc"]},
            {"required": ["http"]},
            {"required": ["image"]},
            {"required": ["configMaps"]},
        ],
    )
    spec = obj(
        "Where to read a catalog and how it ranks against others.",
        {
            "source": source,
            "pollInterval": string(
                f"How often to fetch the catalog (default {DEFAULT_POLL_INTERVAL}).",
                pattern=DURATION,
                default=DEFAULT_POLL_INTERVAL,
            ),
            "priority": integer(
                "Higher wins when several catalogs offer the same package (default 0).",
                default=0,
            ),
        },
        required=["source"],
    )
    status = obj(
        "What pivoter last read from the catalog.",
        {
            "conditions": conditions(),
            "observedGeneration": integer("The generation last processed."),
            "lastFetchTime": string("When the content was last fetched.", format="date-time"),
            "lastChangeTime": string("When the content last changed.", format="date-time"),
            "contentDigest": string("sha256 of the content as fetched (canonical FBC JSON)."),
            "packages": integer("Number of packages in the catalog."),
            "bundles": integer("Number of bundles in the catalog."),
        },
    )
    return crd(
        group=GROUP,
        kind="Catalog",
        plural="catalogs",
        version=VERSION,
        spec=spec,
        status=status,
        categories=["pivoter"],
        description="A Catalog is a source of file-based catalog content for resolution.",
        printer_columns=[
            column("Type", ".spec.source.type"),
            column("Priority", ".spec.priority", "integer"),
            column("Serving", '.status.conditions[?(@.type=="Serving")].status'),
            column("Last Fetch", ".status.lastFetchTime", "date"),
            column("Age", ".metadata.creationTimestamp", "date"),
        ],
    )


def resolution_crd() -> Schema:
    """The ``resolutions.pivoter.io`` CRD."""
    package = obj(
        "A package to install.",
        {
            "name": string("Package name.", pattern=DNS_LABEL, maxLength=253),
            "channel": string("Channel to follow (default: the package's default channel)."),
            "versionRange": string(
                "Versions allowed, e.g. '>=1.2.0 <2.0.0', '^1.2', '1.x' (default: any)."
            ),
            "upgradePolicy": string(
                "CatalogProvided follows the catalog's upgrade edges; SelfCertified allows any "
                "newer or older version in range.",
                enum=["CatalogProvided", "SelfCertified"],
                default="CatalogProvided",
            ),
            "config": free_form(
                "The provisioner configuration of this package's BundleDeployment, e.g. for "
                "registry+v1 targetNamespaces, watchNamespace and deploymentConfig "
                "(docs/registry-v1.md)."
            ),
        },
        required=["name"],
    )
    spec = obj(
        "Which packages to install, from which catalogs, and how to roll them out.",
        {
            "packages": array("Packages to install.", package, minItems=1),
            "catalogSelector": free_form(
                "A label selector over Catalogs (default: all Catalogs, by priority)."
            ),
            "installNamespace": string(
                "Namespace the bundles are installed into (default: the package's suggested "
                "namespace, else <package>-system)."
            ),
            "serviceAccount": obj(
                "The service account whose permissions install the bundles (impersonated).",
                {"name": string("Name."), "namespace": string("Namespace.")},
                required=["name", "namespace"],
            ),
            "approval": string(
                "Automatic pivots on every new selection; Manual publishes a plan and waits for "
                "an approval that names its revision.",
                enum=["Automatic", "Manual"],
                default="Automatic",
            ),
            "approvedRevision": integer("With Manual approval: the revision approved to pivot."),
            "pinnedRevision": integer(
                "Stay on this ResolveSet revision whatever the catalogs offer (set by "
                "`pivoter rollback`, cleared by `pivoter unpin`)."
            ),
            "paused": boolean("Resolve and plan, but do not pivot."),
            "adoptExisting": boolean(
                "Let the BundleDeployments take over objects that another owner (or none) "
                "applied, e.g. what OLM v0 installed before `pivoter adopt` (default false)."
            ),
            "autoRollback": boolean(
                "Revert the whole group to the last successful revision when a pivot fails "
                "(default true).",
                default=True,
            ),
            "progressDeadlineSeconds": integer(
                "How long a pivot may take to become Installed and Healthy "
                f"(default {DEFAULT_PROGRESS_DEADLINE_SECONDS}).",
                default=DEFAULT_PROGRESS_DEADLINE_SECONDS,
                minimum=1,
            ),
            "historyLimit": integer(
                f"ResolveSet revisions kept (default {DEFAULT_HISTORY_LIMIT}); the active and "
                "the last successful revision are always kept.",
                default=DEFAULT_HISTORY_LIMIT,
                minimum=1,
            ),
            "deletionPolicy": string(
                "On deletion, Delete what was installed (CRDs with live custom resources are "
                "kept) or Orphan it.",
                enum=["Delete", "Orphan"],
                default="Delete",
            ),
        },
        required=["packages"],
    )
    selected = obj(
        "One selected bundle.",
        {
            "package": string("Package."),
            "version": string("Version."),
            "bundle": string("Bundle name."),
            "channel": string("Channel."),
            "catalog": string("Catalog it came from."),
            "digest": string(
                "The image's manifest digest, where a verification policy checked its "
                "signatures (the bundle is installed by it)."
            ),
            "signedBy": string("Who signed that digest, or why it was not verified (warn)."),
        },
    )
    status = obj(
        "What pivoter resolved and installed for this input.",
        {
            "conditions": conditions(),
            "observedGeneration": integer("The generation last processed."),
            "selection": array("The bundles of the current selection.", selected),
            "selectionHash": string("Hash of the current selection."),
            "explanation": string("Why nothing fits, when resolution is unsatisfiable."),
            "sharedDependencies": shared_dependencies(),
            "activeRevision": integer("The ResolveSet revision installed now."),
            "lastAttemptedRevision": integer("The ResolveSet revision last pivoted to."),
            "lastSuccessfulRevision": integer("The last revision that became Healthy."),
            "pendingPlan": free_form("With Manual approval: the plan waiting for approval."),
            "pivot": free_form(
                "pivoter: the grouped pivot in progress or last finished (phase, target and "
                "previous revision, failed bundle); a restarted daemon resumes from it."
            ),
        },
    )
    return crd(
        group=GROUP,
        kind="Resolution",
        plural="resolutions",
        version=VERSION,
        spec=spec,
        status=status,
        short_names=["res"],
        categories=["pivoter"],
        description="A Resolution asks pivoter to install packages resolved from Catalogs.",
        printer_columns=[
            column("Ready", '.status.conditions[?(@.type=="Ready")].status'),
            column("Revision", ".status.activeRevision", "integer"),
            column("Reason", '.status.conditions[?(@.type=="Ready")].reason'),
            column("Up-To-Date", '.status.conditions[?(@.type=="UpToDate")].status'),
            column(
                "Why-Not-Newer", '.status.conditions[?(@.type=="UpToDate")].message', priority=1
            ),
            column("Age", ".metadata.creationTimestamp", "date"),
        ],
    )
