"""provisioners: turn a bundle reference into objects on a cluster.

``sources`` fetch bundle content (image, git, http, ConfigMaps), ``formats`` convert it into plain
objects (plain+v0, registry+v1, helm) and ``apply`` installs them with server-side apply. This
package never imports the daemon (:mod:`pivoter`).
"""
