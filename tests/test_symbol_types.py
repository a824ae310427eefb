"""Python uses through chains of typed attributes (issue 41): the type of a member is what its
file declares (a property's return annotation, `x: T` in a class body, `self.x = T()` or an
annotated parameter stored in `__init__`, a function's return annotation), and a use in
another file meets the member's definition when read (ragdb.navigate.known_as)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragdb import RagDB
from ragdb.symbols import extract
from tests.conftest import write_corpus

CORPUS = {
    "src/net/__init__.py": "from net.models import Response as Response\n",
    "src/net/models.py": (
        "from typing import Optional\n\n\n"
        "class Headers:\n"
        "    def get(self, key: str) -> str:\n"
        "        return key\n\n\n"
        "class Transport:\n"
        "    def close(self) -> None:\n"
        "        pass\n\n\n"
        "def make_transport() -> Transport:\n"
        "    return Transport()\n\n\n"
        "class Base:\n"
        "    def ping(self) -> None:\n"
        "        pass\n\n\n"
        "class Response(Base):\n"
        "    label: Optional[Headers] = None\n"
        "    items: list\n\n"
        "    def __init__(self, extra: Headers | None, name: str) -> None:\n"
        "        self._headers = Headers()\n"
        "        self.extra = extra\n"
        "        self.transport = make_transport()\n"
        "        self.name = name\n\n"
        "    @property\n"
        "    def headers(self) -> Headers:\n"
        "        return self._headers\n\n"
        "    def ping(self) -> None:\n"
        "        super().ping()\n"
        "        self._headers.get('a')\n"
        "        self.transport.close()\n"
        "        self.items.append(1)\n"
    ),
    "src/net/main.py": (
        "from net import Response\n"
        "from net.models import make_transport\n\n\n"
        "def show(response: Response, other) -> None:\n"
        "    response.headers.get('x')\n"
        "    response.extra.get('y')\n"
        "    response.label.get('z')\n"
        "    t = make_transport()\n"
        "    t.close()\n"
        "    other.close()\n"
        "    try:\n"
        "        pass\n"
        "    except Response as exc:\n"
        "        exc.headers.get('w')\n"
        "    url = Response(None, 'n') if other else None\n"
        "    url.transport.close()\n"
    ),
}


@pytest.fixture(scope="module")
def rag(tmp_path_factory: pytest.TempPathFactory) -> RagDB:
    work = tmp_path_factory.mktemp("types")
    write_corpus(work, CORPUS)
    db = RagDB(work / "rag.db")
    db.index([work / "src"], vectors=False)
    return db


def places(rag: RagDB, name: str) -> set[tuple[str, int, bool]]:
    return {(p.path.rsplit("/", 1)[-1], p.line, p.resolved)
            for p in rag.references(name, limit=1000).places}


def test_a_property_s_return_annotation_types_its_chain(rag: RagDB) -> None:
    """`response.headers.get` (headers a property `-> Headers`): a use of Headers.get, also
    through the package's re-export of Response and an exception caught by its class."""
    found = places(rag, "net.models.Headers.get")
    assert ("main.py", 6, True) in found
    assert ("main.py", 15, True) in found  # except Response as exc: exc.headers.get
    # and `headers` itself is a use of the property
    assert ("main.py", 6, True) in places(rag, "net.models.Response.headers")


def test_fields_typed_by_their_assignment_or_annotation(rag: RagDB) -> None:
    found = places(rag, "net.models.Headers.get")
    assert ("models.py", 39, True) in found  # self._headers = Headers()
    assert ("main.py", 7, True) in found  # self.extra = extra (extra: Headers | None)
    assert ("main.py", 8, True) in found  # label: Optional[Headers] in the class body


def test_a_function_s_return_annotation_types_what_it_returns(rag: RagDB) -> None:
    found = places(rag, "net.models.Transport.close")
    assert ("models.py", 40, True) in found  # self.transport = make_transport()
    assert ("main.py", 10, True) in found  # t = make_transport(); t.close()
    assert ("main.py", 17, True) in found  # a conditional: Response(...) if c else None
    # a method of an object of unknown type: by its name, unresolved
    assert ("main.py", 11, False) in found


def test_super_and_the_standard_library(rag: RagDB) -> None:
    assert ("models.py", 38, True) in places(rag, "net.models.Base.ping")
    # `items: list`: self.items.append is the list's, never recorded
    assert rag.references("append").places == []


def test_a_member_alias_is_not_a_use_of_the_type_itself(rag: RagDB) -> None:
    """`response.headers` is of type Headers, not a use of the class Headers: the uses of
    Headers are the annotations and calls that name it."""
    found = places(rag, "net.models.Headers")
    assert all(path == "models.py" for path, _line, _resolved in found), found
    assert ("models.py", 34, True) in found  # def headers(self) -> Headers


def test_the_rows_that_carry_types() -> None:
    """The declared types are member aliases on the uses of the type; what a call returns
    is named `f.()` and never listed as a use of anything."""
    text = CORPUS["src/net/models.py"]
    found = extract(text, "python", Path("models.py"), "net/models.py")
    assert found is not None
    aliases = {(r.name, r.target, r.alias, r.kind) for r in found.refs if r.alias}
    assert ("Headers", "models.Headers", "models.Response.headers", "type") in aliases
    assert ("Headers", "models.Headers", "models.Response._headers", "call") in aliases
    assert ("Headers", "models.Headers", "models.Response.extra", "type") in aliases
    assert ("Transport", "models.Transport", "models.make_transport.()", "type") in aliases
    assert ("transport", "models.make_transport.()", "models.Response.transport",
            "type") in aliases
    assert not [r for r in found.refs if r.name in ("name", "str")]  # std: no type, no use


GO = {
    "src/cli/command.go": (
        "package cli\n\nimport (\n\t\"bytes\"\n\tflag \"github.com/spf13/pflag\"\n)\n\n"
        "type Command struct {\n\tparent *Command\n\tcmds   []*Command\n\tbuf    bytes.Buffer\n"
        "\tflags  *flag.FlagSet\n}\n\n"
        "func NewCommand() *Command { return &Command{} }\n\n"
        "func (c *Command) Root() *Command { return c }\n\n"
        "func (c *Command) Commands() []*Command { return c.cmds }\n\n"
        "func (c *Command) Run() {}\n\n"
        "func NoArgs(c *Command) error { return nil }\n"),
    "src/cli/use.go": (
        "package cli\n\n"
        "func Use(cmd *Command, other interface{}) {\n"
        "\tcmd.Run()\n"                                   # 4: a parameter
        "\tx := &Command{}\n\tx.Run()\n"                  # 6: a composite literal
        "\ty, err := NewCommand(), error(nil)\n\ty.Run()\n"  # 8: a call's result
        "\tz := NewCommand()\n\tz.parent.Run()\n"         # 10: a field of a result
        "\tfor _, s := range cmd.Commands() {\n\t\ts.Run()\n\t}\n"  # 12: a range's element
        "\tcmd.Root().Run()\n"                            # 14: a method's result
        "\tvar w Command\n\tw.Run()\n"                    # 16: var w T
        "\t_ = Command{parent: nil}\n"                    # 17: a key, not a use
        "\thandler(NoArgs, err)\n"                        # 18: a function as a value
        "\tvar b bytes.Buffer\n\tb.Reset()\n"             # 20: the standard library
        "\tother.(*Command).Run()\n"                      # 21: a type assertion
        "\tdefaultCmd.Run()\n"                            # 22: another file's var
        "}\n"),
    "src/cli/vars.go": "package cli\n\nvar defaultCmd = &Command{}\n",
}


@pytest.fixture(scope="module")
def go_rag(tmp_path_factory: pytest.TempPathFactory) -> RagDB:
    work = tmp_path_factory.mktemp("go")
    write_corpus(work, GO)
    db = RagDB(work / "rag.db")
    db.index([work / "src"], vectors=False)
    return db


def test_go_values_typed_by_their_declarations(go_rag: RagDB) -> None:
    """A Go value's type, from its parameter, composite literal, var, type assertion, the
    function or method that returns it (a result, a field of one, a range's element): its
    method calls resolve, across the package's files."""
    lines = {line for path, line, resolved in places(go_rag, "cli.Command.Run")
             if path == "use.go" and resolved}
    assert lines == {4, 6, 8, 10, 12, 14, 16, 21, 22}


def test_go_names_used_as_values(go_rag: RagDB) -> None:
    assert ("use.go", 18, True) in places(go_rag, "cli.NoArgs")
    # a struct literal's key is a field's name, not a use of anything named parent
    assert ("use.go", 17, True) not in places(go_rag, "cli.Command.parent")
    # the standard library's values are not typed: b.Reset() is kept by its name only
    assert [p.resolved for p in go_rag.references("Reset").places] == [False]


def test_go_declared_types_are_member_aliases() -> None:
    text = GO["src/cli/command.go"]
    found = extract(text, "go", Path("command.go"), "cli/command.go")
    assert found is not None
    aliases = {(r.name, r.target, r.alias) for r in found.refs if r.alias}
    assert aliases == {
        ("Command", "cli.Command", "cli.Command.parent"),
        ("Command", "cli.Command", "cli.Command.cmds.[]"),
        ("FlagSet", "pflag.FlagSet", "cli.Command.flags"),
        ("Command", "cli.Command", "cli.NewCommand.()"),
        ("Command", "cli.Command", "cli.Command.Root.()"),
        ("Command", "cli.Command", "cli.Command.Commands.().[]"),
    }
