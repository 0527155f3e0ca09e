#!/usr/bin/env python3
"""vm-tests/site-edit.py USER-DATA EDITS.json: a site's edits to a pasted
cloud-init example, as a person makes them in an editor: each [old, new]
pair replaces text that occurs exactly once in the example (else the
scenario fails, naming the edit: the example changed under the test).
The result must still be YAML that cloud-init reads as #cloud-config."""
import json
import sys

import yaml

path, edits_path = sys.argv[1], sys.argv[2]
text = open(path).read()
for old, new in json.load(open(edits_path)):
    n = text.count(old)
    if n != 1:
        sys.exit("      site edit %r: found %d times in %s, want exactly once" % (old.strip(), n, path))
    text = text.replace(old, new)
if not text.startswith("#cloud-config\n"):
    sys.exit("      %s: not #cloud-config after the site's edits" % path)
yaml.safe_load(text)
open(path, "w").write(text)
