"""OpenShift's ``platform.openshift.io/v1alpha1`` ``PlatformOperator``, accepted unchanged.

A PlatformOperator names only a package; pivoter resolves it from all Catalogs by priority and
installs it through the same path as a Resolution.
"""

from __future__ import annotations

from pivoter.apis._schema import Schema, column, conditions, crd, free_form, integer, obj, string
from pivoter.apis.pivoter import shared_dependencies

GROUP = "platform.openshift.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

TYPE_INSTALLED = "Installed"
REASON_SOURCE_FAILED = "SourceFailed"
REASON_UNPACK_PENDING = "UnpackPending"
REASON_INSTALL_FAILED = "InstallFailed"
REASON_INSTALL_SUCCESSFUL = "InstallSuccessful"
REASON_INSTALL_PENDING = "InstallPending"


def platform_operator_crd() -> Schema:
    """The ``platformoperators.platform.openshift.io`` CRD."""
    spec = obj(
        "The package to install.",
        {
            "package": obj(
                "A package from the cluster's catalogs.",
                {
                    "name": string(
                        "Package name.",
                        pattern="[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                        maxLength=56,
                        minLength=1,
                    )
                },
                required=["name"],
            )
        },
        required=["package"],
    )
    status = obj(
        "What is installed for this platform operator.",
        {
            "conditions": conditions(),
            "activeBundleDeployment": obj(
                "The BundleDeployment that installs the package.",
                {"name": string("Its name.")},
                required=["name"],
            ),
            "observedGeneration": integer("pivoter: the generation last processed."),
            "sharedDependencies": shared_dependencies(),
            "activeRevision": integer("pivoter: the ResolveSet revision installed now."),
            "lastAttemptedRevision": integer("pivoter: the ResolveSet revision last pivoted to."),
            "lastSuccessfulRevision": integer("pivoter: the last revision that became Healthy."),
            "pivot": free_form(
                "pivoter: the grouped pivot in progress or last finished; a restarted daemon "
                "resumes from it."
            ),
        },
    )
    return crd(
        group=GROUP,
        kind="PlatformOperator",
        plural="platformoperators",
        version=VERSION,
        spec=spec,
        status=status,
        description="A PlatformOperator installs one package from the cluster's catalogs.",
        printer_columns=[
            column("Installed", '.status.conditions[?(@.type=="Installed")].status'),
            column("Reason", '.status.conditions[?(@.type=="Installed")].reason'),
            column("Up-To-Date", '.status.conditions[?(@.type=="UpToDate")].status'),
            column(
                "Why-Not-Newer", '.status.conditions[?(@.type=="UpToDate")].message', priority=1
            ),
            column("Age", ".metadata.creationTimestamp", "date"),
        ],
    )
