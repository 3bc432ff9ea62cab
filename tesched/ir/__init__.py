"""The loop IR: nodes (:mod:`.nodes`, which installs the pseudo-code printer :mod:`.printer` as ``str()`` of
statements), loop kinds (:mod:`.kinds`), visitors (:mod:`.visitor`) and the verifier (:mod:`.verify`).
Importing the package alone loads none of them."""
