"""Credentials: which files hold one, by name (.env, id_rsa, *.tfvars) or by what they hold (a
private key block, a token by its form, a config key naming a credential set to a real-looking
value, a connection string's password, a Django SECRET_KEY), so that no index, served page or
answer carries one. The walk (ragdb.walking) leaves such files out unread by name; the index
run (ragdb.indexing) reads the rest and leaves out what holds one."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from ragdb.chunking import HEADING_KINDS
from ragdb.file_types import SYNTAX_LANGUAGES, file_language

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
#: `_authToken=`, `_auth=` or `_password=` and a .netrc `machine ... password` line, a signed
#: JWT, a kubeconfig's client key, a Docker config's "auth" (a .env line and a URL's
#: password: _ENV_SECRET, _URL_PASSWORD). The values AWS's own docs use (AKIAIOSFODNN7EXAMPLE)
#: hold none.
_TOKENS = tuple(re.compile(p) for p in (
    r"AKIA[0-9A-Z]{16}(?![0-9A-Z])", r"ASIA[0-9A-Z]{16}(?![0-9A-Z])",
    *(name + r"[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
      for name in ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey")),
    r"gh[pousr]_[A-Za-z0-9]{36,}", r"github_pat_[A-Za-z0-9_]{50,}", r"npm_[A-Za-z0-9]{36}\b",
    r"pypi-AgEIcHlwaS5vcmc[\w-]{20,}", r"xox[abposr]-[0-9A-Za-z-]{10,}",
    r"sk_live_[0-9A-Za-z]{20,}", r"rk_live_[0-9A-Za-z]{20,}", r"AIza[0-9A-Za-z_-]{35}(?![\w-])",
    r"_authToken\s*=\s*[^\s$\"'{][^\s\"']{7,}",
    # npm's other registry logins: `_auth=` (base64 of user:password), `_password=` (base64),
    # bare or scoped to a registry (`//npm.acme.io/:_password=...`), as .npmrc writes them.
    # The `_` opens the pattern (a line start before it is checked behind it): `(?m)^` first
    # cost a regex step at every line of every file (training corpora: 2.5 s against 0.1 s).
    r"_(?:auth(?<![^\n:]_auth)|password(?<![^\n:]_password))[ \t]*=[ \t]*[^\s$\"'{][^\s\"']{7,}",
    r"machine[ \t]+\S+[^\n]*[ \t]password[ \t]+\S+",
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
    r"(?:SECRET_KEY|ACCESS_KEY|PRIVATE_KEY|API_?KEY|SIGNING_KEY|ENCRYPTION_KEY|SECRET|PASSWORD"
    r"|PASSWD|TOKEN)"
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
#: `client_secret:`, `secret_key:`, `passphrase:`, `jwt_signing_key:`, `encryption_key:`; its
#: name ends in the word (`password_file:`, `token_url:`, `secretName:` name a place, not a
#: credential). Then its value, quoted or bare (a YAML value keeps a `#` inside it: `password:
#: Xk9#mQ2vLp`).
_CREDENTIAL = (r"(?i:password|passwd|passphrase|secret(?:[_.-]?key)?|token|api[_.-]?key"
               r"|access[_.-]?key|private[_.-]?key|signing[_.-]?key|encryption[_.-]?key)")
_CONFIG_SECRET = re.compile(
    r"(?:^[ \t]*(?:-[ \t]+)?[\"']?|[{,][ \t]*[\"'])"
    rf"(?P<name>[\w.-]*?{_CREDENTIAL})[\"']?[ \t]*"
    r"(?:=(?![=~>])|:(?!:))[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s,;]*))", re.M)
#: What a file must hold, in lower case, for _CONFIG_SECRET or _XML_TAG to be looked for: one
#: of these words, or one of _KEY_KINDS followed by one of _KEY_SEPARATORS and `key`.
_CREDENTIAL_WORDS = frozenset(("passw", "passphrase", "secret", "token"))
_KEY_KINDS = frozenset(("api", "access", "private", "signing", "encryption"))
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
#: A property list's credential (macOS and iOS: an app's Info.plist or a settings .plist):
#: `<key>APIToken</key>` names it, the `<string>` after it holds it.
_PLIST_CREDENTIAL = re.compile(rf"<key>\s*(?P<name>[\w.-]*?{_CREDENTIAL})\s*</key>\s*"
                               r"<string>(?P<value>[^<]*)</string>")
#: A connection string's password (ADO.NET, ODBC, JDBC, Npgsql, libpq): `Password=` or
#: `Pwd=` among other `key=value` pairs on its line (`Server=db;User Id=sa;Password=...;` in
#: a web.config or appsettings.json, `jdbc:sqlserver://db;user=sa;password=...` in a
#: .properties, `host=db dbname=app password=...`); _CONNECTION_KEY names the others. ODBC
#: quotes a value in braces (`Pwd={Xk9;mQ2vLp}`: a `;` inside it is the password's).
_CONNECTION_PASSWORD = re.compile(r"(?<![\w.-])(?i:password|pwd)[ \t]*=(?!=)[ \t]*"
                                  r"(?P<value>\{[^}\n]*\}|[^;\"'\s<>]*)")
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
    (_xml_credentials, _MAVEN_ENCRYPTED), a plist's `<key>password</key>` and the `<string>`
    after it (_PLIST_CREDENTIAL); not `password: changeme`, `${DB_PASSWORD}`,
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
    if "<key>" in text and any(_real_looking(m["name"], html.unescape(m["value"]).strip())
                               for m in _PLIST_CREDENTIAL.finditer(text)):
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
    Id=sa;Password=Xk9mQ2vLp;`, ODBC's `Pwd={Xk9;mQ2vLp}`. Not a reference (`${DB_PASSWORD}`,
    `%(pw)s`), a placeholder (`Password=password`, `Pwd=***`, a sample word:
    `Your_password123`), the user's name again, a value of under 3 characters, nor a string
    for a local or example server (`Server=localhost`, `(localdb)\\mssqllocaldb`,
    `Server=.\\SQLEXPRESS`: a developer's database)."""
    for m in _CONNECTION_PASSWORD.finditer(text):
        value = m["value"]
        if value.startswith("{") and value.endswith("}") and len(value) > 1:
            # ODBC's quoted value, or a template's `{password}` / `{0}`: only a real-looking
            # one (_real_looking) is a password.
            if not _real_looking("password", value[1:-1]):
                continue
            value = value[1:-1]
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
