"""Check the repos7 question sets against the fetched corpora (no ragdb involved).

    python benchmarks/repos7/verify.py [--root PROJECT_ROOT] [--show]

Run from the project root after `bash benchmarks/repos7/fetch.sh`. It checks what the set
promises: 20 questions per package (10 docs + 10 code, each 4 identifier / 3 paraphrase /
3 conceptual), uuid5 ids, one span per question of 100-1,500 characters inside an existing
file (Python str offsets, UTF-8, no newline translation) that starts and ends with the quoted
passage recorded for it in anchors.json (the start quote found exactly once in its file), no span
used twice, at most three questions on one file, every question naming its package as a word
(plumbum, markdownlint, criterion: each package's folder is the name its users know), and the
unanswered files holding the same ids and questions.
`--show` prints each question with the text its span slices to, for reading the answers against it.
Exit status 1 and one line per problem if anything is off.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # run as a script: the project root for `benchmarks`

from benchmarks.set_verify import run  # noqa: E402

PACKAGES = ("plumbum", "markdownlint", "criterion")
NAMESPACE_URL = "https://github.com/ragdb/benchmarks/repos7"

if __name__ == "__main__":
    run(HERE, PACKAGES, NAMESPACE_URL)
