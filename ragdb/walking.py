"""The walk: which files under the roots an index run reads, and what it leaves out and why.

The default file-type rule (every UTF-8 text, each file in its language), --include and
--exclude globs, hidden folders, symlinks kept inside the root, and the ignore rules
(ragdb.ignore_rules). Paths are stored relative to the folder the index is built from."""

from __future__ import annotations

import fnmatch
import html
import json
import os
import re
import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from ragdb.chunking import HEADING_KINDS, file_kind
from ragdb.errors import RagdbError
from ragdb.file_types import SYNTAX_LANGUAGES, is_vendored_dir, language_for
from ragdb.ignore_rules import Rules, ancestor_rules, folder_rules, ignored
from ragdb.reading import inside, link_target

DEFAULT_INCLUDE: tuple[str, ...] = ()  # globs --include adds to the default file-type rule
DEFAULT_EXCLUDE: tuple[str, ...] = ()  # globs --exclude takes out of it
#: Python and prose only, what `--include` used to select (the benchmarks compare with it):
#: WalkOptions(include=PYTHON_AND_DOCS, exclude=EVERYTHING).
PYTHON_AND_DOCS = ("*.py", "*.md", "*.txt", "*.rst")
EVERYTHING = ("*",)
MAX_GLOB_CHARS = 1000  # a longer --include/--exclude glob is refused, not compiled
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git", ".hg", ".svn", ".venv", ".tox"})

# --- the file-type rule -----------------------------------------------------------------------
# Every file the walk reaches is indexed, each in its language (file_language), any other
# UTF-8 text as "text"; binary content, non-UTF-8, huge, lockfiles, generated and minified
# files are left out when read. Files in a binary format, .gitignore files and credentials are
# known by name and never opened (WalkOptions.verdict).
BINARY_SUFFIXES = frozenset("""
    .png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .xcf .heic .avif
    .pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub
    .zip .gz .tgz .bz2 .xz .zst .lz4 .7z .rar .tar .jar .war .whl .egg .deb .rpm .dmg .iso .apk
    .so .dll .dylib .a .o .obj .lib .exe .bin .elf .wasm .pyc .pyo .pyd .class
    .woff .woff2 .ttf .otf .eot .mp3 .mp4 .m4a .wav .ogg .flac .avi .mov .mkv .webm
    .npy .npz .pt .pth .ckpt .safetensors .onnx .gguf .pb .tflite .h5 .hdf5 .pkl .pickle
    .parquet .arrow .feather .db .sqlite .sqlite3 .mdb
""".split())
#: The .env templates a project ships for its users to copy (`.env.example`, `.env.dist`,
#: `app.env.sample`): indexed, their values read as samples (holds_token's `template`).
_TEMPLATE_SUFFIXES = "example|sample|template|dist"
_ENV_TEMPLATE = re.compile(rf"(?:.*\.)?env\.(?:{_TEMPLATE_SUFFIXES})")
#: Files that hold credentials by convention (.env, private keys): never indexed unless an
#: --include names them, so a served rag.db cannot leak them (templates like .env.example stay).
#: Also the stores of git, npm and Docker logins, htpasswd files, OAuth client and service
#: credentials, Terraform state (which holds every secret of what it built in plain text) and
#: variable files (`terraform.tfvars`, `prod.auto.tfvars`: a deployment's values, passwords
#: included, which Terraform's own .gitignore keeps out of git; `*.tfvars.example` stays),
#: WordPress's and Rails' deployed configs, Maven's master password (settings-security.xml,
#: which opens every password settings.xml holds encrypted: _MAVEN_ENCRYPTED), the MySQL and
#: s3cmd logins, and shell and REPL histories (`export TOKEN=...`, `mysql -phunter2`,
#: `psql postgres://me:pw@...` as typed).
_SECRETS = re.compile(rf"\.env(?:rc|\.(?!(?:{_TEMPLATE_SUFFIXES})$)[\w.-]+)?|\.netrc"
                      r"|\.pypirc|\.pgpass|id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?"
                      r"|.+\.(?:pem|key|p12|pfx|keystore|jks|env)|\.git-credentials|\.npmrc"
                      r"|\.dockercfg|\.htpasswd|credentials\.json|client_secret[\w.-]*\.json"
                      r"|.+\.tfstate(?:\.backup)?|.+\.tfvars(?:\.json)?|wp-config\.php|secrets\.yml"
                      r"|settings-security\.xml"
                      r"|\.my\.cnf|\.s3cfg|\.histfile|\.(?:bash|zsh|sh|python|psql|mysql|sqlite"
                      r"|node_repl|rediscli|irb|pry)_history")
#: A private key with its base64 body (PEM: PKCS#1/#8, EC, DSA, OpenSSH, encrypted PKCS#8;
#: an armored PGP secret key), as a key file or a JSON credential's "private_key" string holds
#: it (lines broken by `\n` escapes there): its optional headers (Proc-Type, DEK-Info,
#: Version) and the first base64 line. A placeholder (`-----BEGIN PRIVATE KEY-----\n...`)
#: holds no key.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----|-----BEGIN PGP PRIVATE"
    r" KEY BLOCK-----")
_KEY_BODY = re.compile(r"(?:\\[nr]|\s)+(?:[A-Za-z][\w-]*:[^\n\\]*(?:\\[nr]|\s)+){0,4}"
                       r"[A-Za-z0-9+/=]{40,}")
#: A credential by its form, as secret scanners know it: an AWS access key id or an assigned
#: secret access key, GitHub, npm, PyPI, Slack, Stripe and Google API tokens, a registry's
#: `_authToken=` and a .netrc `machine ... password` line, a signed JWT, a kubeconfig's
#: client key, a Docker config's "auth" (a .env line and a URL's password: _ENV_SECRET,
#: _URL_PASSWORD). The values AWS's own docs use (AKIAIOSFODNN7EXAMPLE) hold none.
_TOKENS = tuple(re.compile(p) for p in (
    r"AKIA[0-9A-Z]{16}(?![0-9A-Z])", r"ASIA[0-9A-Z]{16}(?![0-9A-Z])",
    *(name + r"[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
      for name in ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey")),
    r"gh[pousr]_[A-Za-z0-9]{36,}", r"github_pat_[A-Za-z0-9_]{50,}", r"npm_[A-Za-z0-9]{36}\b",
    r"pypi-AgEIcHlwaS5vcmc[\w-]{20,}", r"xox[abposr]-[0-9A-Za-z-]{10,}",
    r"sk_live_[0-9A-Za-z]{20,}", r"rk_live_[0-9A-Za-z]{20,}", r"AIza[0-9A-Za-z_-]{35}(?![\w-])",
    r"_authToken\s*=\s*[^\s$\"'{][^\s\"']{7,}", r"machine[ \t]+\S+[^\n]*[ \t]password[ \t]+\S+",
    # A signed JSON Web Token (a kubeconfig's bearer token, a session), a kubeconfig's client
    # key, a Docker config's registry login.
    r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}", r"client-key-data:[ \t]*[A-Za-z0-9+/=]{40,}",
    r"\"auth\"[ \t]*:[ \t]*\"[A-Za-z0-9+/]{12,}=*\"",
    # An OpenSSH private key's body without its BEGIN/END lines (a key pasted into a config,
    # an id_ed25519 copied bare): base64 of "openssh-key-v1\0", which only such a key opens with.
    r"b3BlbnNzaC1rZXktdjEA[A-Za-z0-9+/=\s]{40,}",
    # Rails' secret_key_base (config/secrets.yml, a copy of it): signs every session cookie.
    r"secret_key_base[\"']?[ \t]*[:=][ \t]*[\"']?[0-9a-fA-F]{30,}",
))
#: A .env line (hard-linked or copied under another name): an upper-case name (_ENV_NAME
#: before it on its line) that ends saying secret, set (`=`, not `==`) to a literal value of
#: 4+ characters (a short or lower-case password is one too: `DB_PASSWORD=hunter2`), not a
#: reference (`${VAR}`, `%(var)s`), a number, an expression or a placeholder: one that is the
#: whole value (`changeme`, `your-token-here`, `test`, `example`; `changeme-abc123` is a
#: password), one elided in it (`sk-...`, `ghp_xxxxxxxx`, `sk-<key>`: what a README or an
#: .env.example shows), or one of the name's own words (`POSTGRES_PASSWORD=postgres`, a
#: docker image's documented default; holds_token).
_ENV_SECRET = re.compile(
    r"(?:SECRET_KEY|ACCESS_KEY|PRIVATE_KEY|API_?KEY|SECRET|PASSWORD|PASSWD|TOKEN)"
    r"[ \t]*=(?![=~])[ \t]*[\"']?(?![$<{*%(\[]|\d+(?![^\s\"'#])|(?i:changeme|change_me"
    r"|change-me|your[\w-]*|x{3,}|none|null|nil|true|false|empty|redacted|secret|password"
    r"|test|testing|dummy|fake|example|sample|placeholder)(?![^\s\"'#]))"
    r"(?![^\s\"'#]*(?:\.\.\.|\u2026|[xX]{3}|\*{3}|<))(?P<value>[^\s\"'#]{4,})")
#: A URL that carries a password (`DATABASE_URL: postgres://app:s3cret@db/app` in a
#: docker-compose.yml, `sqlalchemy.url = postgresql://scott:tiger@host/db` in alembic.ini,
#: `redis://:pw@host`), other than a placeholder (`user:pass@`, `user:password@`, the user
#: name again: `postgres:postgres@`), a reference (`${PW}`, `%(pw)s`, `<password>`), or one
#: for a local or example host (`@localhost`, `@127.0.0.1`, `@db.example.com`: a README's or a
#: config sample's development database; holds_token).
_URL_PASSWORD = re.compile(
    r"[a-zA-Z][a-zA-Z0-9+.-]*://(?P<user>[^\s:/@'\"<>{}$%]*):(?!(?i:pass|password|passwd|pwd|pw"
    r"|secret|changeme|x+|\*+)@)(?P<password>[^\s:/@'\"<>{}$%]{3,})@(?P<host>[\w.-]+)")
_SAMPLE_HOST = re.compile(r"(?i:localhost|127(?:\.\d+){3}|0\.0\.0\.0"
                          r"|(?:[\w-]+\.)*example(?:\.(?:com|org|net))?)")
_ENV_NAME = re.compile(r"[ \t]*(?:export[ \t]+)?[A-Z0-9_]*")
_ENV_WORDS = ("SECRET", "PASSW", "TOKEN", "KEY")
#: A config file's key that names a credential, in any case (YAML, INI, TOML, a .properties,
#: JSON): `password:`, `db_password =`, `aws_secret_access_key =`, `apiKey:`, `"token":`,
#: `client_secret:`, `secret_key:`, `passphrase:`; its name ends in the word (`password_file:`,
#: `token_url:`, `secretName:` name a place, not a credential). Then its value, quoted or bare
#: (a YAML value keeps a `#` inside it: `password: Xk9#mQ2vLp`).
_CREDENTIAL = (r"(?i:password|passwd|passphrase|secret(?:[_.-]?key)?|token|api[_.-]?key"
               r"|access[_.-]?key|private[_.-]?key)")
_CONFIG_SECRET = re.compile(
    r"(?:^[ \t]*(?:-[ \t]+)?[\"']?|[{,][ \t]*[\"'])"
    rf"(?P<name>[\w.-]*?{_CREDENTIAL})[\"']?[ \t]*"
    r"(?:=(?![=~>])|:(?!:))[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s,;]*))", re.M)
#: What a file must hold, in lower case, for _CONFIG_SECRET or _XML_TAG to be looked for: one
#: of these words, or one of _KEY_KINDS followed by one of _KEY_SEPARATORS and `key`.
_CREDENTIAL_WORDS = frozenset(("passw", "passphrase", "secret", "token"))
_KEY_KINDS = frozenset(("api", "access", "private"))
_KEY_SEPARATORS = ("", "_", "-", ".")
#: An XML name (an element's, an attribute's, or what a `name`/`key` attribute gives) that
#: names a credential: it ends in the word, as _CONFIG_SECRET's keys do (`<password>`,
#: `<db.password>`, `<wsse:Password>`, `apiKey="..."`, `name="hibernate.connection.password"`).
_XML_CREDENTIAL = re.compile(rf"(?:[\w.-]*:)?(?P<local>[\w.-]*?{_CREDENTIAL})")
#: An XML start tag: the one _xml_credentials finds around a credential's name (_XML_NAME_END).
_XML_TAG = re.compile(r"<(?P<tag>[A-Za-z_][\w.:-]*)(?P<attrs>[^<>]*)>")
#: A credential's name ending where an XML name ends, in lower case: `password>` (an element:
#: Maven's `<password>`), `password=` (an attribute), `password"` (a `name`/`key` attribute's
#: value: a web.config's `<add key="SmtpPassword" value="..."/>`, Spring's `<property
#: name="password" value="..."/>`). One literal each, each looked for only where the file holds
#: it: an alternation of them costs a regex step at every letter of every file.
_XML_NAME_END = tuple((word, re.compile(rf"{pattern}[\s>=\"'/]")) for word, pattern in (
    ("passw", "passw(?:or)?d"), ("passphrase", "passphrase"), ("secret", "secret(?:[_.-]?key)?"),
    ("token", "token"), *((kind, rf"{kind}[_.-]?key") for kind in sorted(_KEY_KINDS))))
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_XML_ATTR = re.compile(r"(?P<name>[A-Za-z_][\w.:-]*)[ \t\r\n]*=[ \t\r\n]*"
                       r"(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)')")
#: An element's text up to its end tag, in CDATA or not: `realValue9x</password>`.
_XML_TEXT = re.compile(r"(?:\s*<!\[CDATA\[(?P<cdata>.*?)\]\]>\s*|(?P<text>[^<]*))"
                       r"</(?P<end>[\w.:-]+)\s*>", re.S)
#: A password Maven encrypted (`<password>{COQLCE6DU6GtcS5P=}</password>` in settings.xml,
#: `<master>{...}</master>` in settings-security.xml): not plain text, but Maven opens it with
#: the master password, and the master with a key every copy of Maven knows, so whoever reads
#: both files reads the password. A credential, as the plain value is.
_MAVEN_ENCRYPTED = re.compile(r"\{[A-Za-z0-9+/]{12,}={0,2}\}")
#: A connection string's password (ADO.NET, ODBC, JDBC, Npgsql, libpq): `Password=` or
#: `Pwd=` among other `key=value` pairs on its line (`Server=db;User Id=sa;Password=...;` in
#: a web.config or appsettings.json, `jdbc:sqlserver://db;user=sa;password=...` in a
#: .properties, `host=db dbname=app password=...`); _CONNECTION_KEY names the others.
_CONNECTION_PASSWORD = re.compile(r"(?<![\w.-])(?i:password|pwd)[ \t]*=(?!=)[ \t]*"
                                  r"(?P<value>[^;\"'\s<>]*)")
#: Where a file may hold one, in lower case (looked for before _CONNECTION_PASSWORD, which
#: reads either case and so costs more).
_CONNECTION_HINTS = tuple((word, re.compile(rf"{word}[ \t]*=(?!=)"))
                          for word in ("password", "pwd"))
_CONNECTION_KEY = re.compile(
    r"(?<![\w.-])(?P<key>(?i:server|data[ \t]+source|host|hostname|addr|address|network[ \t]+"
    r"address|user[ \t]*id|uid|user|username|user[ \t]+name|database|databasename|dbname"
    r"|initial[ \t]+catalog))[ \t]*=(?!=)[ \t]*(?P<value>[^;\"'\s<>]*)")
_USER_KEYS = ("userid", "uid", "user", "username")
_SERVER_KEYS = ("server", "datasource", "host", "hostname", "addr", "address", "networkaddress")
_URL_HOST = re.compile(r"://\[?(?P<host>[\w.-]+)")
#: Values that name no password: what _URL_PASSWORD takes for a placeholder.
_PASSWORD_PLACEHOLDER = re.compile(r"(?i:pass|password|passwd|pwd|pw|secret|changeme|x+|\*+)")
#: A connection string's server on the developer's machine (SQL Server's `.`, `(local)`,
#: `(localdb)\mssqllocaldb`, `.\SQLEXPRESS`) or a sample host (_SAMPLE_HOST).
_LOCAL_SERVER = re.compile(r"(?i:\.|\(local\)|\(localdb\))")
#: What a connection string's server names beside its host: SQL Server's protocol
#: (`tcp:db01`), port (`db01,1433`, `db:5432`) and instance (`.\SQLEXPRESS`).
_SERVER_HOST = re.compile(r"(?:(?i:tcp|np|lpc):)?(?P<host>[^,:\\]*)")
#: Python that sets Django's or Flask's SECRET_KEY to a literal: `SECRET_KEY = '...'` (a
#: settings.py, a config class), `app.config['SECRET_KEY'] = '...'`, `'SECRET_KEY': '...'`,
#: `SECRET_KEY='...'` as an argument, `app.secret_key = '...'`.
_PY_SECRET_KEY = re.compile(
    r"(?:(?:^|[(,])[ \t]*(?:[\w.]+\[[\"']SECRET_KEY[\"']\]|SECRET_KEY|[\w.]+\.secret_key)"
    r"(?:[ \t]*:[ \t]*\w+)?[ \t]*=(?!=)|[\"']SECRET_KEY[\"'][ \t]*:)[ \t]*"
    r"[rbuRBU]?(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)')", re.M)
#: A value that is not itself a credential: a reference (`${DB_PASSWORD}`, `%(pw)s`,
#: `{{ vault_pw }}`, `<your-password>`, a YAML alias or tag such as `!vault` or Home
#: Assistant's `!secret db_password`, sops' `ENC[...]`, an `arn:`, `vault:` or `op://` path, a
#: file path, a URL: _URL_PASSWORD reads those), or a variable's name (`DB_PASSWORD`).
_REFERENCE = re.compile(r"[$%<{\[*&!@(/~.|>]|ENC\[|(?i:arn|vault|env|file|ssm|op|secret)[:/]"
                        r"|.*://|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
#: Words that mark a value as a sample wherever they stand in it (`django-insecure-...`,
#: `my-example-token1`, `sk_test_...`, `changeme123`, `your_key_here`, `xxxx`, `****`).
_SAMPLE_WORD = re.compile(r"(?i:example|sample|dummy|fake|placeholder|insecure|change_?me"
                          r"|change-me|your|test|redacted|xxx|\*\*\*|\.\.\.|\u2026)")


def _real_looking(name: str, value: str) -> bool:
    """Whether a config value or a SECRET_KEY literal looks like a credential rather than a
    sample: 8 characters or more without a space, letters and digits both (a generated key, a
    password such as `Xk9#mQ2vLp`; `mypassword`, `supersecret`, `dev`, `development key` are
    what samples show), not a reference or a variable's name (_REFERENCE), no sample word in
    it (_SAMPLE_WORD), and none of the name's own words (`password: password1`)."""
    if len(value) < 8 or any(c.isspace() for c in value):
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if _REFERENCE.match(value) or _SAMPLE_WORD.search(value):
        return False
    words = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower().replace("-", "_").replace(".", "_")
    lowered = value.lower()
    return not any(len(word) >= 4 and word in lowered for word in words.split("_"))


#: Words that name a config file a sample or a template to copy (_sample_name).
_SAMPLE_NAME_WORDS = frozenset("example examples sample samples template templates dist tmpl tpl"
                               .split())


def _sample_name(name: str) -> bool:
    """Whether a file is named as a sample or a template to copy, its values samples:
    `database.yml.example`, `config.sample.toml`, `settings_template.ini`, `app.dist.yml`.
    A name that is the word alone is not (`template.yaml` is a CloudFormation stack)."""
    stem, dot, suffix = name.lower().rpartition(".")
    if dot and stem and suffix in _SAMPLE_NAME_WORDS:
        return True
    parts = re.split(r"[._-]", stem if dot and stem else name.lower())
    return len(parts) > 1 and any(part in _SAMPLE_NAME_WORDS for part in parts)


def holds_config_secret(text: str) -> bool:
    """Whether a config file (YAML, INI, TOML, a .properties, JSON, XML) sets a key that
    names a credential to a real-looking literal (_CONFIG_SECRET, _real_looking): `password:
    Xk9#mQ2vLp` in config/database.yml, `db_password = "s3cr3tValue9"` in app.ini,
    `<password>realValue9x</password>` in Maven's settings.xml or its `{...}` encrypted form
    (_xml_credentials, _MAVEN_ENCRYPTED); not `password: changeme`, `${DB_PASSWORD}`,
    `<your-password>` or `""`. Or it holds a connection string with a password
    (holds_connection_password: a web.config's, an appsettings.json's)."""
    lowered = text.lower()
    if any(word in lowered and hint.search(lowered) for word, hint in _CONNECTION_HINTS) and (
            holds_connection_password(text)):
        return True
    # Each word looked for once, for both rules (a file's every `in` costs as much as a regex).
    present = [(word, name_end) for word, name_end in _XML_NAME_END if word in lowered]
    if not any(word in _CREDENTIAL_WORDS or any(f"{word}{sep}key" in lowered
                                                for sep in _KEY_SEPARATORS)
               for word, _name_end in present):
        return False
    for m in _CONFIG_SECRET.finditer(text):
        value = m["dq"] if m["dq"] is not None else m["sq"] if m["sq"] is not None else m["bare"]
        if _real_looking(m["name"], value):
            return True
    return "<" in text and any(
        _MAVEN_ENCRYPTED.fullmatch(value) or _real_looking(name, value)
        for name, value in _xml_credentials(text, lowered, present))


def _xml_credentials(text: str, lowered: str, present: Sequence[tuple[str, re.Pattern[str]]]
                     ) -> Iterator[tuple[str, str]]:
    """The values XML gives a name that names a credential, each with that name: an
    element's text (`<password>realValue9x</password>`), an attribute's value (`password=
    "..."`), and the `value` (else the text) of an element whose `name` or `key` attribute
    names one (`<add key="SmtpPassword" value="..."/>`). Entities are read (`&amp;`). Only
    the tags around a credential's name are read (`present`: the _XML_NAME_END the text holds
    in lower case, `lowered`), not every tag of an XML or HTML file."""
    if len(lowered) != len(text):  # a letter whose lower case is longer (İ): places move
        lowered = text.translate(_ASCII_LOWER)
    starts = set()
    for _word, name_end in present:
        # The last `<` and `>` before each hit, found from the hit before (a file of many
        # hits is read once, not once a hit).
        # A tag read, the search goes on after it (or after the next `<`, for a `<` that
        # opens no tag: `a < b`).
        opened = closed = -1
        before = place = 0
        while (hit := name_end.search(lowered, place)) is not None:
            at = place = hit.start() + 1
            opened = max(opened, text.rfind("<", before, at))
            closed = max(closed, text.rfind(">", before, at))
            before = at
            if opened <= closed or opened in starts:
                continue  # not inside a tag, or a tag already read
            starts.add(opened)
            m = _XML_TAG.match(text, opened)
            if m is not None:
                yield from _tag_credentials(text, m)
                place = max(place, m.end())
            else:
                following = text.find("<", opened + 1)
                if following < 0:
                    break
                place = max(place, following)


def _tag_credentials(text: str, m: re.Match[str]) -> Iterator[tuple[str, str]]:
    """The credentials one start tag gives (_xml_credentials), each with its name."""
    attrs = {a["name"]: a["dq"] if a["dq"] is not None else a["sq"]
             for a in _XML_ATTR.finditer(m["attrs"])}
    inner = None
    if not m["attrs"].endswith("/"):  # not an empty element (`<add ... />`)
        end = _XML_TEXT.match(text, m.end())
        if end is not None and end["end"] == m["tag"]:
            inner = (end["cdata"] if end["cdata"] is not None
                     else html.unescape(end["text"]).strip())
    named = _XML_CREDENTIAL.fullmatch(m["tag"])
    if named and inner is not None:
        yield named["local"], inner
    for name, value in attrs.items():
        named = _XML_CREDENTIAL.fullmatch(name)
        if named:
            yield named["local"], html.unescape(value)
        elif name.lower() in ("name", "key") and _XML_CREDENTIAL.fullmatch(value):
            given = next((v for n, v in attrs.items() if n.lower() == "value"), inner)
            if given is not None:
                yield value, html.unescape(given)


def _local_server(server: str) -> bool:
    """Whether a connection string's server is the developer's machine or a sample host."""
    m = _SERVER_HOST.match(server)
    host = m["host"] if m else ""
    return not host or bool(_LOCAL_SERVER.fullmatch(host) or _SAMPLE_HOST.fullmatch(host))


def holds_connection_password(text: str) -> bool:
    """Whether a connection string in a config file carries a password (_CONNECTION_PASSWORD
    beside another of its keys on the line), as a URL does (_URL_PASSWORD): `Server=db;User
    Id=sa;Password=Xk9mQ2vLp;`. Not a reference (`${DB_PASSWORD}`, `%(pw)s`), a placeholder
    (`Password=password`, `Pwd=***`, a sample word: `Your_password123`), the user's name
    again, a value of under 3 characters, nor a string for a local or example server
    (`Server=localhost`, `(localdb)\\mssqllocaldb`, `Server=.\\SQLEXPRESS`: a developer's
    database)."""
    for m in _CONNECTION_PASSWORD.finditer(text):
        value = m["value"]
        if (len(value) < 3 or _REFERENCE.match(value) or _PASSWORD_PLACEHOLDER.fullmatch(value)
                or _SAMPLE_WORD.search(value)):
            continue
        # Its line, up to 500 characters either side (a minified line is not read whole).
        start = text.rfind("\n", max(0, m.start() - 500), m.start()) + 1 or m.start() - 500
        end = text.find("\n", m.end(), m.end() + 500)
        line = text[max(0, start):end if end >= 0 else m.end() + 500]
        keys = {k["key"].lower().replace(" ", "").replace("\t", ""): k["value"]
                for k in _CONNECTION_KEY.finditer(line)}
        if not keys:
            continue
        user = next((keys[k] for k in _USER_KEYS if k in keys), "")
        if value.lower() == user.lower():
            continue
        server = next((keys[k] for k in _SERVER_KEYS if k in keys), None)
        if server is None:  # JDBC: jdbc:sqlserver://db:1433;user=sa;password=...
            url = _URL_HOST.search(line)
            server = url["host"] if url else ""
        if server and _local_server(server):
            continue
        return True
    return False


def holds_python_secret_key(text: str) -> bool:
    """Whether Python code sets SECRET_KEY (Django's settings.py, a Flask config) to a
    real-looking literal (_real_looking): it signs the sessions and tokens of the deployment
    it came from. Django's template value (`django-insecure-...`), one read from the
    environment, and samples such as `'dev'` or `'development key'` are not."""
    if "SECRET_KEY" not in text and ".secret_key" not in text:
        return False
    return any(_real_looking("secret_key", m["dq"] if m["dq"] is not None else m["sq"])
               for m in _PY_SECRET_KEY.finditer(text))


def holds_token(text: str, template: bool = False) -> bool:
    """Whether text holds a credential by its form (_TOKENS, _URL_PASSWORD, _ENV_SECRET),
    other than the AWS keys AWS's docs use (AKIAIOSFODNN7EXAMPLE, ...EXAMPLEKEY) and the
    placeholders those rules name. Each pattern opens with text of its own, which the search
    skips to: a file of code costs little. `template` (an .env.example, .env.dist, ...: its
    values are samples by its name, Symfony's `APP_SECRET=ThisTokenIsNotSoSecretChangeIt`):
    only a token of a known form (_TOKENS) counts."""
    for pattern in _TOKENS:
        for m in pattern.finditer(text):
            found = m.group(0).upper()
            if not (found.startswith(("AKIA", "ASIA", "AWS_")) and "EXAMPLE" in found):
                return True
    if template:
        return False
    if "://" in text and "@" in text:
        for m in _URL_PASSWORD.finditer(text):
            if m["password"] != m["user"] and not _SAMPLE_HOST.fullmatch(m["host"]):
                return True
    if any(word in text for word in _ENV_WORDS):
        for m in _ENV_SECRET.finditer(text):
            line = text.rfind("\n", 0, m.start()) + 1
            named = _ENV_NAME.fullmatch(text, line, m.start())
            if named is None:
                continue
            name = text[line:m.start("value")].split("=")[0].split()[-1]
            if m["value"].lower() not in name.lower().split("_"):
                return True
    return False


#: Kinds where a key block is a sample, kept: code in a language ragdb parses (a test key in a
#: string of the `cryptography` package) and docs pages (an example in its docs). Any other
#: file holding one (no extension, .txt, .json, YAML, .env-like, INI, TOML, XML, ...) is a key
#: file or a credential, and a secret whatever its name.
_SAMPLE_KINDS = SYNTAX_LANGUAGES | HEADING_KINDS | {"python"}

#: A file whose first line names one of these interpreters is in that language.
_SHEBANG = re.compile(r"#![ \t]*(?:/usr)?(?:/local)?/bin/(?:env[ \t]+(?:-\S+[ \t]+)*)?"
                      r"(sh|bash|dash|ksh|zsh|python[\d.]*|node|nodejs|ruby|perl|lua)\b")
_SHEBANG_LANGUAGES = {"sh": "shell", "bash": "shell", "dash": "shell", "ksh": "shell",
                      "zsh": "shell", "node": "javascript", "nodejs": "javascript",
                      "ruby": "ruby", "perl": "perl", "lua": "lua"}


def language_of(path: str) -> str | None:
    """The language a file is indexed as (stored in files.kind), by name: Python and prose by
    ragdb.chunking, every other language by ragdb.syntax_chunking; None for a file whose name
    says nothing (file_language then reads its first line, else it is "text")."""
    return language_for(path) or file_kind(path)


def file_language(name: str, text: str) -> str:
    """The language of a file read as `text`: by name, else by its #! line, else "text"."""
    known = language_of(name)
    if known is not None:
        return known
    if text.startswith("#!"):
        m = _SHEBANG.match(text)
        if m is not None:
            interpreter = m.group(1)
            return "python" if interpreter.startswith("python") else _SHEBANG_LANGUAGES[interpreter]
    return "text"


def holds_private_key(text: str) -> bool:
    """Whether text holds a private key block with its body (_PRIVATE_KEY, _KEY_BODY)."""
    if "PRIVATE KEY" not in text:  # most files: one substring test
        return False
    return any(_KEY_BODY.match(text, m.end()) for m in _PRIVATE_KEY.finditer(text))


def secret_name(name: str) -> bool:
    """Whether a file's name says it holds credentials (_SECRETS: .env, id_rsa, *.pem, ...)."""
    return _SECRETS.fullmatch(name) is not None


def secret_by_content(path: Path, text: str) -> bool:
    """Whether a file whose name tells nothing (`deploy_key`, `key.txt`, a service account's
    `project-1234.json`, a `config.txt` with an AWS key, a hard link to a .env, a notebook
    whose output printed a token, a config/database.yml with its password) is a secret by
    what it holds: a private key block or a credential (holds_token, holds_config_secret) in
    a file that is not code or a docs page (_SAMPLE_KINDS), where one is a sample. The one
    exception in code: Python that sets SECRET_KEY to a real-looking literal (a deployment's
    Django settings.py, as wp-config.php is WordPress's: holds_python_secret_key). A config
    file named as a sample (`database.yml.example`, `config.sample.toml`) keeps its values.
    A symlink is judged by its target's name too (`notes.md -> deploy_key` is the key file)."""
    names = [path.name]
    if os.path.islink(path):
        names.append(os.path.basename(os.path.realpath(path)))
    kinds = [file_language(name, text) for name in names]
    if "python" in kinds and holds_python_secret_key(text):
        return True
    if all(kind in _SAMPLE_KINDS for kind in kinds):
        return False  # code and docs (most of a repository) are not read for one
    template = all(_ENV_TEMPLATE.fullmatch(name) for name in names)
    if holds_private_key(text) or holds_token(text, template):
        return True
    return (not all(_sample_name(name) for name in names)
            and holds_config_secret(text))


def read_for_secrets(name: str) -> bool:
    """Whether secret_by_content reads a file of this name for a credential (code and docs
    pages keep theirs as samples, but Python is read for its SECRET_KEY; a file whose
    language its #! line tells is read)."""
    return file_language(name, "") not in _SAMPLE_KINDS - {"python"}


#: Reasons a file is left out by its name alone (counted, not named one by one).
EXCLUDED = "excluded"
BINARY = "binary"
IGNORE_RULES = "ignore rules"  # a .gitignore: read as the walk's rules, not indexed as text
SECRETS = "may hold secrets"  # _SECRETS
#: A symlink whose target lies in a folder the walk does not enter (.hidden/token.txt): a
#: harmless link name must not let it in (nor one into .git, even with --hidden).
HIDDEN_TARGET = "symlink into a hidden folder"
INCLUDED = "included"  # WalkOptions.verdict: an --include names the file


def _glob_matcher(globs: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether a file matches any glob: a glob with a '/' is matched against the path under
    the root (`*` crosses '/'), any other against the file name. Case-sensitive. A `[` also
    matches itself, as in a search's --path: `--exclude 'pages/posts/[id].tsx'` (a Next.js
    route) read the brackets as a character class and left the file in."""
    globs = [*globs, *(g.replace("[", "[[]") for g in globs if "[" in g)]
    names = [re.compile(fnmatch.translate(g)) for g in globs if "/" not in g]
    paths = [re.compile(fnmatch.translate(g.lstrip("/") + ("*" if g.endswith("/") else "")))
             for g in globs if "/" in g]
    name_re = re.compile("|".join(f"(?:{r.pattern})" for r in names)) if names else None
    path_re = re.compile("|".join(f"(?:{r.pattern})" for r in paths)) if paths else None

    def matches(name: str, rel: str) -> bool:
        return bool((name_re is not None and name_re.match(name))
                    or (path_re is not None and path_re.match(rel)))
    return matches


@dataclass(frozen=True)
class WalkOptions:
    """Which files a walk yields: the default file-type rule, plus the files `include` names
    and minus those `exclude` names (a file both name is included)."""

    include: tuple[str, ...] = DEFAULT_INCLUDE  # globs: indexed even where the rule says no
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE  # globs: left out, unless include names them
    ignore: bool = True  # honour .gitignore files, .git/info/exclude and their ! negations
    hidden: bool = False  # walk into folders whose name starts with a dot
    follow_symlinks: bool = False  # follow links whose target lies outside the root

    def __post_init__(self) -> None:
        for option, globs in (("--include", self.include), ("--exclude", self.exclude)):
            for glob in globs:
                if not glob.strip():
                    raise RagdbError(f"{option} needs a glob, not an empty string")
                if len(glob) > MAX_GLOB_CHARS:
                    raise RagdbError(f"{option} glob is {len(glob)} characters long; at most "
                                     f"{MAX_GLOB_CHARS} are accepted")
                if not glob.isprintable():
                    raise RagdbError(f"{option} glob {json.dumps(glob)} holds control characters")
        both = sorted(set(self.include) & set(self.exclude))
        if both:
            raise RagdbError(f"--include and --exclude both name {', '.join(map(repr, both))}: "
                             "give it to one of them")

    def verdict(self, name: str, rel: str) -> str:
        """The file-type rule by name alone, for a file the walk reached (`rel`: its path under
        the root, needed only when a glob has a '/'): INCLUDED when an --include names it,
        else the reason it is left out unread, else "" (read, and judged by its content)."""
        if self.include and _matchers(self.include)(name, rel):
            return INCLUDED
        if self.exclude and _matchers(self.exclude)(name, rel):
            return EXCLUDED
        if os.path.splitext(name)[1].lower() in BINARY_SUFFIXES:
            return BINARY
        if name == ".gitignore":
            return IGNORE_RULES
        if secret_name(name):
            return SECRETS
        return ""

    def skips_folder(self, name: str) -> bool:
        """Whether the walk never enters a folder of this name (hidden, or .git and the like)."""
        return name in _SKIP_DIRS or (name.startswith(".") and not self.hidden)

    def link_verdict(self, target: Path, top: Path, is_dir: bool) -> str:
        """The reason a symlink is left out by what it leads to, else "": the credential and
        hidden-folder rules judge the resolved target as the walk would judge it there (its
        folders under the root; outside the root, which only --follow-symlinks reaches, its
        own name), so `settings.txt -> .env` is left out as .env is. An --include naming the
        target's name lets it in, as it does the target: INCLUDED for a file (its content is
        then not judged either, as the target's is not)."""
        parts = target.relative_to(top).parts if inside(target, top) else (target.name,)
        folders = parts if is_dir else parts[:-1]
        if any(d.startswith(".") and self.skips_folder(d) for d in folders):
            return HIDDEN_TARGET
        named = bool(self.include) and _matchers(self.include)(target.name, "/".join(parts))
        if not is_dir and not named and _SECRETS.fullmatch(target.name):
            return SECRETS
        return INCLUDED if named and not is_dir else ""

    def under(self, root: str) -> "WalkOptions":
        """These options for a walk of `root`: an absolute glob (`/home/me/proj/tests/*`, as
        a shell completes it) read as the path under the root (`/tests/*`), as the search
        filters read one (stored_glob); an existing folder named without a trailing '/' is
        that folder. Kept absolute in the recorded options, so a re-index reads it again."""
        if not any(g.startswith("/") for g in self.include + self.exclude):
            return self
        return replace(self, include=tuple(_glob_under(g, root) for g in self.include),
                       exclude=tuple(_glob_under(g, root) for g in self.exclude))

    def to_json(self) -> str:
        return json.dumps({"include": list(self.include), "exclude": list(self.exclude),
                           "ignore": self.ignore, "hidden": self.hidden,
                           "follow_symlinks": self.follow_symlinks})

    @classmethod
    def from_json(cls, text: str) -> "WalkOptions":
        raw = json.loads(text or "{}")
        include = tuple(raw.get("include", DEFAULT_INCLUDE))
        # Recorded before --exclude existed, --include replaced the rule: the same file set
        # (an --include '*' was every file already).
        legacy = EVERYTHING if include and "*" not in include else DEFAULT_EXCLUDE
        exclude = tuple(raw.get("exclude", legacy))
        return cls(include=include, exclude=exclude,
                   ignore=bool(raw.get("ignore", True)), hidden=bool(raw.get("hidden", False)),
                   follow_symlinks=bool(raw.get("follow_symlinks", False)))


def _glob_under(glob: str, root: str) -> str:
    """An absolute glob as a path glob under `root` (a leading '/' anchors it there, so
    `/proj/setup.py` is that file, not every setup.py); one outside `root` is as given (it
    matches nothing there)."""
    if not glob.startswith("/"):
        return glob
    if not glob.endswith("/") and not any(c in glob for c in "*?[") and os.path.isdir(glob):
        glob += "/"
    mapped = stored_glob(glob, root)
    return glob if mapped == glob else "/" + mapped


@lru_cache(maxsize=64)
def _matchers(globs: tuple[str, ...]) -> Callable[[str, str], bool]:
    return _glob_matcher(globs)


@dataclass
class Scan:
    """What a walk of the roots found: files to read, and what it left alone and why."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: Files left out by name (--exclude, a binary format): counted, not named.
    left_out: list[tuple[Path, str]] = field(default_factory=list)
    #: Files an --include glob names: the rule's lockfile, generated and minified checks spare
    #: them (they are still left out when binary, not UTF-8 or too large).
    included: set[Path] = field(default_factory=set)
    #: Folders that exist but cannot be listed: their files keep the rows they had.
    unreadable_dirs: list[Path] = field(default_factory=list)


def _is_package(folder: str) -> bool:
    """A vendored folder the project imports as its own Python package (vllm/third_party with
    its __init__.py) is code the project ships and calls: it stays in the index."""
    return os.path.isfile(os.path.join(folder, "__init__.py"))


def name_ok(name: str) -> bool:
    """Whether a file or folder name is UTF-8 (rag.db stores text; os.listdir hands a name
    that is not as a str with lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(path: Path) -> Path:
    """A path whose name is not UTF-8, as it can be printed: its bytes escaped (\\xff)."""
    return Path(os.fsencode(path).decode("utf-8", errors="backslashreplace"))


def _entries(folder: str) -> tuple[list[str], list[str]]:
    """(folder names, other names) of a folder, as os.walk sorts them: a symlink to a folder
    counts as a folder; one whose target cannot be told, as a file. OSError: unreadable."""
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(folder) as listing:
        for entry in listing:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
    return sorted(dirs), sorted(files)


def _walk(root: Path, options: WalkOptions, scan: Scan, own: frozenset[str] = frozenset()
          ) -> None:
    """Files under a root (or the root itself when it is a file), in a stable order: ignore
    rules, vendored and hidden folders, symlinks that leave the root or lead where the rules
    leave out, and ragdb's own files (`own`: real paths, ragdb_files) are left out.

    Depth first with a stack of its own (os.walk recurses, and a tree about 990 folders deep
    ended the run in a RecursionError)."""
    if not root.is_dir():
        # Named by the user: read as given, but a link by what it leads to, as in a walk
        # (`ragdb index notes.txt` with notes.txt -> ~/.ssh/id_rsa names no key).
        target = link_target(root) if root.is_symlink() else None
        why = "" if target is None else options.link_verdict(
            target, Path(os.path.abspath(root.parent)).resolve(), False)
        if why and why != INCLUDED:
            scan.skipped.append((root, why))
        else:
            if why == INCLUDED:
                scan.included.add(root)
            scan.files.append(root)
        return
    base = Path(os.path.abspath(root))
    top = root.resolve()
    visited = {top}
    options = options.under(str(base))
    use_paths = any("/" in g for g in options.include + options.exclude)
    named: set[Path] = set()  # ignore files the rules skipped and named: counted once

    def skip(path: Path, reason: str) -> None:
        named.add(path)
        scan.skipped.append((path, reason))

    inherited = ancestor_rules(base, skip) if options.ignore else []
    # (folder, the folder as the root spells it, its real path, the rules above it); a child
    # is made with `/`, which parses only its name: deep trees cost no more per folder than
    # shallow ones (its real path too: only a followed link is resolved)
    stack: list[tuple[Path, Path, str, Rules]] = [(base, root, str(top), inherited)]
    while stack:
        folder, out, real, rules = stack.pop()
        dirpath = str(folder)
        try:
            dirnames, filenames = _entries(dirpath)
        except OSError as exc:
            scan.unreadable_dirs.append(out)
            scan.skipped.append((out, f"unreadable folder ({exc.strerror})"))
            continue
        if options.ignore:
            rules = rules + folder_rules(folder, out, (folder / ".git").is_dir(), top, skip)
        kept = []
        for d in sorted(dirnames):
            if options.skips_folder(d):
                continue
            full = os.path.join(dirpath, d)
            if is_vendored_dir(d) and not _is_package(full):
                continue
            if rules and ignored(rules, full, is_dir=True):
                continue
            if not name_ok(d):
                scan.skipped.append((_escaped(out / d), "name not UTF-8"))
                continue
            real_d = os.path.join(real, d)
            if os.path.islink(full):
                target = link_target(Path(full))
                if target is None:
                    scan.skipped.append((out / d, "broken symlink"))
                    continue
                if not options.follow_symlinks:
                    if not inside(target, top):
                        scan.skipped.append((out / d, "symlink outside the root"))
                    continue  # a link inside the root: its files are indexed where they are
                if target in visited or str(target) in own:
                    continue  # a loop, or a folder reached twice
                why = options.link_verdict(target, top, is_dir=True)
                if why:
                    scan.left_out.append((out / d, why))
                    continue
                visited.add(target)
                real_d = str(target)
            elif real_d in own:
                continue
            kept.append((d, real_d))
        stack.extend((folder / d, out / d, real_d, rules) for d, real_d in reversed(kept))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if rules and ignored(rules, full, is_dir=False):
                continue
            if not name_ok(name):
                scan.skipped.append((_escaped(out / name), "name not UTF-8"))
                continue
            if own and os.path.join(real, name) in own:
                continue  # rag.db, its -wal and lock: never its own input
            verdict = options.verdict(name, full[len(str(base)) + 1:] if use_paths else "")
            if verdict == INCLUDED:
                pass  # scan.included once a link's target passes its own rules, below
            elif verdict == IGNORE_RULES and out / name in named:
                continue  # skipped as a rules file already (a FIFO, a link out of the root)
            elif verdict:
                scan.left_out.append((out / name, verdict))
                continue
            if os.path.islink(full):
                target = link_target(Path(full))
                if target is None:
                    scan.skipped.append((out / name, "broken symlink"))
                    continue
                if not options.follow_symlinks and not inside(target, top):
                    scan.skipped.append((out / name, "symlink outside the root"))
                    continue
                if str(target) in own:
                    continue
                # Judged by its target even where an --include names the link: `--include
                # '*.txt'` must not let in `notes.txt -> id_rsa` (an --include naming the
                # target does, in link_verdict).
                why = options.link_verdict(target, top, False)
                if why == INCLUDED:
                    verdict = INCLUDED
                elif why:
                    scan.left_out.append((out / name, why))
                    continue
            if verdict == INCLUDED:
                scan.included.add(out / name)
            scan.files.append(out / name)


def relative(path: Path) -> str:
    """The stored path: relative to the current directory, as the user typed the corpus root."""
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()  # already relative and normal: what relpath would give
    return Path(os.path.relpath(path)).as_posix()


def stored_path(path: Path) -> str:
    """How rag.db names a file or root: relative to the current directory, '/'-separated."""
    return relative(path)


def stored_under(path: str, top: str) -> str | None:
    """`path`, as the shell spells it, through its real path relative to `top` (the folder
    the index was built from), in the form the index stores paths ('.' for `top` itself);
    None when it lies outside `top` or cannot be resolved."""
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(top))
    except (OSError, ValueError):
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def stored_glob(glob: str, top: str) -> str:
    """A path filter as a coding agent passes it (`/home/me/proj/src/*.py`, absolute) in the
    form the index stores paths (`src/*.py`): its folders before the first wildcard,
    stored_under `top`; a trailing `/` kept. A glob that is not absolute, or lies outside
    `top`, is as given."""
    if not glob.startswith("/") or not top:
        return glob
    trailing = "/" if glob.endswith("/") else ""
    parts = glob.rstrip("/").split("/")
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")),
                 len(parts))
    rel = stored_under("/".join(parts[:fixed]) or "/", top)
    if rel is None:
        return glob
    pieces = ([] if rel == os.curdir else [rel]) + parts[fixed:]
    return "/".join(pieces) + trailing if pieces else "*"


def real_root(root: Path) -> str:
    """What a root is, whatever its spelling: a folder's real path (through symlinks), a
    file's name in its folder's real path (a symlinked file is a file of its own, as in a walk)."""
    if os.path.isdir(root):
        return os.path.realpath(root)
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(root))), root.name)


def distinct_roots(roots: Sequence[Path]) -> list[Path]:
    """The roots once each: `a`, `$PWD/a`, `a/../a` and a symlink to `a` are one root (by its
    real path), spelled as it was first given."""
    unique: dict[str, Path] = {}
    for root in roots:
        unique.setdefault(real_root(root), root)
    return list(unique.values())


def scan_roots(roots: Sequence[Path], options: WalkOptions = WalkOptions(),
               own: frozenset[str] = frozenset()) -> Scan:
    """Every file to consider, checked up front so a bad root fails before anything changes.

    Symlinks whose target lies outside their root are skipped unless options.follow_symlinks.
    A file reached through two roots (a folder and a subfolder of it, spelled differently or
    through a symlinked folder) is listed once. `own`: ragdb's own files, never listed.
    """
    roots = distinct_roots(roots)
    check_roots(roots)
    scan = Scan()
    for root in roots:
        found, left_out = len(scan.files), len(scan.left_out)
        _walk(root, options, scan, own)
        excluded = sum(1 for _, why in scan.left_out[left_out:] if why == EXCLUDED)
        if excluded and len(scan.files) == found:
            # Its rows would all be deleted: refused before anything is written.
            raise RagdbError(
                f"--exclude {' '.join(map(repr, options.exclude))} leaves no file to index "
                f"under {root} ({excluded} excluded); nothing was changed")
    scan.files = _unique_files(scan.files)
    if len(roots) > 1:  # a file under two roots (a root and a subfolder root) is left out once
        scan.skipped = _unique_reasons(scan.skipped)
        scan.left_out = _unique_reasons(scan.left_out)
    return scan


def check_absolute_globs(roots: Sequence[Path], options: WalkOptions) -> None:
    """An absolute --include or --exclude (`$PWD/tests/*`) names files under a root
    (WalkOptions.under); one given with roots that lies under none of them would name nothing,
    silently (a typo, another checkout): refused in one line before anything is written.
    (Recorded with a root that moved since, it names nothing, and the re-index goes on.)"""
    folders = [str(root) for root in roots if os.path.isdir(root)]
    for option, globs in (("--include", options.include), ("--exclude", options.exclude)):
        for glob in globs:
            # stored_glob gives back an absolute glob as it is where it lies outside `folder`.
            if glob.startswith("/") and folders and all(
                    stored_glob(glob, f) == glob for f in folders):
                raise RagdbError(
                    f"{option} {glob} lies outside the folders indexed "
                    f"({', '.join(map(str, folders))}): it would name no file; give a path "
                    "under one of them, or a glob relative to it")


def _unique_reasons(found: Sequence[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """Each skipped or left-out path once (by its folder's real path and its name), first
    reason kept, in the order found."""
    unique: dict[tuple[str, str], tuple[Path, str]] = {}
    for path, why in found:
        unique.setdefault((os.path.realpath(path.parent), path.name), (path, why))
    return list(unique.values())


def _unique_files(files: Sequence[Path]) -> list[Path]:
    """Each file once, by the real path of its folder (`a/x.md`, `$PWD/a/x.md` and
    `link-to-a/x.md` are one file; a symlinked file is a file of its own), sorted."""
    unique: dict[tuple[str, str], Path] = {}
    folders: dict[Path, str] = {}
    for path in files:
        folder = folders.get(path.parent)
        if folder is None:
            folder = folders[path.parent] = os.path.realpath(path.parent)
        unique.setdefault((folder, path.name), path)
    return sorted(unique.values())


def scan_also(scan: Scan, paths: Sequence[str], recorded: dict[str, str],
              own: frozenset[str] = frozenset()) -> None:
    """Add recorded roots to a scan, each walked with the options of its last run."""
    for path in paths:
        if not os.path.exists(path):
            raise RagdbError(
                f"this run rebuilds the whole index (a different chunk size or ragdb version) "
                f"and the recorded root {path} is gone (no such file or directory): "
                f"`ragdb roots --remove {shlex.quote(path)}` forgets it and its rows")
        check_roots([Path(path)])
        _walk(Path(path), WalkOptions.from_json(recorded[path]), scan, own)
    scan.files = _unique_files(scan.files)


def check_roots(roots: Sequence[Path]) -> None:
    """A root that is missing or unreadable fails the run before anything is written."""
    for root in roots:
        if not name_ok(str(root)) or not name_ok(relative(root)):
            raise RagdbError(f"cannot index {_escaped(root)}: its name is not UTF-8")
        if not root.exists():
            raise RagdbError(f"cannot index {root}: no such file or directory")
        if not root.is_dir() and not root.is_file():
            # A device, FIFO or socket (/dev/null, a named pipe) holds no file to index: as a
            # root it was recorded, and every later run named it as skipped.
            raise RagdbError(f"cannot index {root}: not a file or folder (a device, a FIFO or "
                             "a socket)")
        if not os.access(root, os.R_OK) or (root.is_dir() and not os.access(root, os.X_OK)):
            raise RagdbError(f"cannot index {root}: permission denied")


def collect_files(roots: Sequence[Path], options: WalkOptions = WalkOptions()) -> list[Path]:
    return scan_roots(roots, options).files


def holds(root: str, path: str) -> bool:
    """Whether the stored root `root` holds the stored path `path`, on whole components:
    `docs` holds `docs/a.md`, never `docs.md`; `docs/a.md` never holds `docs/a.md.txt`. `.`
    holds what lies inside the current folder, not `../other/x`; a root of `..` only (the
    current folder lies inside it) holds what is not further out. sql/roots_list.sql and
    sql/roots_remove.sql apply the same rule."""
    if root == ".":
        return not path.startswith("../")
    if not (root + "/").replace("../", ""):  # "..", "../..": parents of the current folder
        return not path.startswith(root + "/../")
    return path == root or path.startswith(root + "/")


def under(path: str, roots: Sequence[str]) -> bool:
    """Whether a stored path lies under one of these stored roots."""
    return any(holds(root, path) for root in roots)


def below_root(path: str, roots: Sequence[str]) -> str:
    """A stored path as seen from the outermost of these stored roots that holds it (a root
    that is the file itself: its name): what the full-text index reads as the path.

    The root's own folders are in every path under it; indexed, they would make their words
    (`requests-2.32.3`: 2, 32, 3) common to every chunk, and a question naming them would find
    nothing."""
    for root in sorted(roots, key=len):
        if holds(root, path):
            if path == root:
                return path.rsplit("/", 1)[-1]
            # `.` holds paths as they are; `..` holds `x` (the current folder) too
            return path[len(root) + 1:] if path.startswith(root + "/") else path
    return path
