"""pivoter's admission webhook: Bundle immutability and source checks, ConfigMaps in use by
Bundles, and the least-privilege rule for BundleDeployments and for every pivot input kind.

:mod:`.review` decodes AdmissionReviews and builds responses; one module per admitted kind
(:mod:`.bundles`, :mod:`.configmaps`, :mod:`.bundledeployments`, and :mod:`.inputs` for the
kinds of :data:`pivoter.apis.inputs.INPUT_KINDS`) decides; :mod:`.server` serves them over TLS;
:mod:`.registration` writes the ValidatingWebhookConfiguration.
"""
