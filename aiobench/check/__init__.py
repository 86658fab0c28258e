"""``aiobench check DIR``: a fixed battery of tests sized to a time budget, with judgement.

``plan`` (the battery, the budget and the sizes; pure), ``judge`` (rules over the results;
pure), ``render`` (table, markdown, the JSON document; pure), ``workdir`` (the check's own
directory in DIR: probing, cleaning up), ``run`` (the tests through the phase runner) and
``command`` (the CLI edge).
"""
