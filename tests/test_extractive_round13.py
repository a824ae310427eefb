"""Issue 19, round 13: passages that stand on nothing shown, and a file's head as code.

Read from the tuning answers' rejections (public docs 1-50, code outside the accept sample,
repos half A): an opening phrase pointing back ("To facilitate this, vLLM includes a
plugin system ...") shown without the sentence before it in the same chunk; a list item
explaining "the example above" shown without the example; a file's licence, module
docstring and imports shown as the code that answers. Chunks are the real ones of the vLLM
0.10.1 corpus (tests/sources).
"""

from __future__ import annotations

import pytest

from ragdb.generate.answer_units import source_units, split_passages
from ragdb.generate.extractive import SourceText
from tests.test_extractive_coherence import answer, code_lines, source


def test_an_opening_phrase_pointing_back_comes_with_the_sentence_it_stands_on() -> None:
    intro = source("plugin_system_intro", "docs/design/plugin_system.md", "markdown")
    units = [intro.text[u.start:u.end] for u in source_units(intro)]
    assert not any(u.startswith("To facilitate this") for u in units)
    text = answer("What is the purpose of vLLM's plugin system?", [intro])
    assert text.startswith("The community frequently requests the ability to extend vLLM")
    assert "To facilitate this, vLLM includes a plugin system" in text


@pytest.mark.parametrize("opener", ["To facilitate this", "For these reasons",
                                    "In cases like this", "In other words",
                                    "As mentioned above", "Because of this"])
def test_a_sentence_opening_on_a_phrase_that_points_back_never_stands_alone(
        opener: str) -> None:
    text = (f"Each adapter is registered under a name at start-up. {opener}, pass "
            "`--lora-modules name=path` to the server command.\n")
    sourced = SourceText(1, "docs/lora.md", "markdown", text)
    texts = [p.text for p in split_passages(sourced)]
    assert text.strip() in texts and not any(t.startswith(opener) for t in texts)
    # At a chunk's start there is nothing to stand on: the sentence is shown as it is (its
    # words still answer), not dropped.
    alone = SourceText(1, "docs/lora.md", "markdown", text.split(". ", 1)[1])
    assert [p.text for p in split_passages(alone)] == [alone.text.strip()]


def test_a_phrase_pointing_at_its_own_document_is_no_leaning() -> None:
    text = "In this guide, we serve two adapters from one base model with `vllm serve`.\n"
    sourced = SourceText(1, "docs/lora.md", "markdown", text)
    assert [p.text for p in split_passages(sourced)] == [text.strip()]


def test_a_list_item_explaining_the_example_above_is_not_shown_without_it() -> None:
    parts = source("plugin_system_parts", "docs/design/plugin_system.md", "markdown")
    text = answer("What is the plugin value of a vLLM plugin?", [parts])
    # The item comes only inside its whole list, under the sentence introducing it.
    assert not text.startswith("3. **Plugin value**")
    assert text.startswith("Every plugin has three parts:")


def test_a_files_licence_docstring_and_imports_are_no_code_answer() -> None:
    head = source("jsontree_head", "vllm/utils/jsontree.py", "python")
    text = answer("What types are supported as containers in vLLM's JSONTree type "
                  "definition?", [head])
    assert "SPDX-License-Identifier" not in text and "from functools import" not in text
    assert 'JSONTree = Union[dict[str, "JSONTree[_T]"], list["JSONTree[_T]"],' in text


def test_a_code_window_is_never_a_lone_comment_marker() -> None:
    # Session 33: a Ruby comment block (YARD's yardoc.rb, its RDoc on the command's options):
    # the best run of lines, trimmed, left only the `#` of an empty comment line, shown as the
    # code that answers. Such a window is no window: the answer shows the options instead.
    from ragdb.generate.code_window import windowed

    yardoc = source("yardoc_tag_options", "lib/yard/cli/yardoc.rb", "ruby")
    query = {"generat", "without", "project", "tag", "code", "ruby", "add", "writ", "keep",
             "yard", "specific", "html"}
    window = windowed(yardoc, (559, 1146), (0, len(yardoc.text)), 0.2, query, 1.2,
                      min_chars=300)
    assert window is None or any(c.isalpha() for c in window.text)
    text = answer("How can I add a project-specific tag to YARD without writing any Ruby "
                  "code, and keep it out of the generated HTML?", [yardoc])
    assert "```\n#\n```" not in text
    assert "--tag+ TAG:TITLE" in text


def test_a_code_window_does_not_open_or_close_on_a_bare_comment_marker() -> None:
    # Session 33: YARD's doc comments space their paragraphs with a lone `#`; a window that
    # began on one opened the answer's code block with it.
    parser = source("yard_create_tag", "lib/yard/docstring_parser.rb", "ruby")
    text = answer("How does YARD's `DocstringParser#create_tag` recognize a `(see ...)` "
                  "reference?", [parser])
    blocks = [code_lines(text, n) for n in range(text.count("```") // 2)]
    assert all(b[0].strip() != "#" and b[-1].strip() != "#" for b in blocks)
    block = next(b for b in blocks if any("def create_tag(tag_name" in line for line in b))
    assert any("see" in line and "\\(" in line for line in block)  # the (see ...) pattern


def test_a_chunk_that_begins_inside_a_code_block_is_read_past_its_closing_fence() -> None:
    # Session 33: fastify's Encapsulation.md cut inside a block whose last line is output
    # (`# {"answer":42,...}`, read as a heading); the bare fence after it was taken to open a
    # block, and the answer began with a lone fence. A fence that names a language (```js)
    # after it settles it: a closing fence names none.
    tail = source("fastify_encapsulation_tail", "docs/Reference/Encapsulation.md", "markdown")
    text = answer("In Fastify, how can a parent context use a decorator that was registered "
                  "inside a child plugin?", [tail])
    assert not text.startswith("```") and text.count("```") % 2 == 0
    units = [tail.text[u.start:u.end] for u in source_units(tail)]
    assert not any(u.lstrip().startswith("```\n") for u in units)
    assert units[0].startswith("`fastify-plugin` breaks encapsulation")
    assert any("```js" in u and u.rstrip().endswith("```") for u in units)
