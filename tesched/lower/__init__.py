"""The lowering pipeline (:mod:`.pipeline`), its checks (:mod:`.checks`) and its result (:mod:`.func`)."""
