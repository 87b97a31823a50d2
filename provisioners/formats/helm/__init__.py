"""The helm bundle format (rukpak's ``core-rukpak-io-helm``): a chart rendered by the real Helm
engine, applied by pivoter's own appliers.

:class:`HelmFormat` finds the chart (:mod:`.chart`), gathers values (:mod:`.values`), runs
``helm template`` with a deadline and an output cap (:mod:`.render`) and returns the objects.
No Helm release is created: the objects go through server-side apply, pruning and drift
correction like every other format, so there is no release Secret and no 1 MiB release limit.
"""

from provisioners.formats.helm.chart import find_chart
from provisioners.formats.helm.format import HelmFormat
from provisioners.formats.helm.render import Capabilities, RenderLimits

__all__ = ["Capabilities", "HelmFormat", "RenderLimits", "find_chart"]
