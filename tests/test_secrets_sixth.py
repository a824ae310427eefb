"""The secret rules' sixth round (the review's leftovers): a config file's lower-case key set
to a real-looking credential (YAML, INI, TOML, a .properties, JSON), Terraform's variable
files by name, a Python SECRET_KEY literal (a deployment's Django settings.py), a plain
`datasette rag.db` that served an older index's secrets, and XML configs (Maven's
settings.xml, a web.config) and connection strings with a password. Samples stay indexed.
Real things: the CLI and Datasette as subprocesses, their rag.db."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from tests.conftest import (
    free_port,
    index_leaving_out_secrets,
    models_dir_without_writer,
    one_line_error,
    run_cli,
    wait_until_serving,
    write_corpus,
)

#: Config files as repositories ship them, their credentials samples: indexed.
CONFIG_SAMPLES = {
    "config/sample.yml": "development:\n  adapter: postgresql\n  password: changeme\n",
    "config/ref.yml": "db:\n  password: ${DB_PASSWORD}\n  token: <your-token>\n"
                      "  api_key: \"\"\n  secret: true\n  password_file: /run/secrets/db1\n",
    "config/ansible.yml": "db_password: \"{{ vault_db_password }}\"\n"
                          "api_token: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n",
    "config/database.yml.example": "production:\n  password: Xk9#mQ2vLp\n",
    ".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n      - uses: codecov/codecov-"
                                "action@v4\n        with:\n          token: ${{ secrets.CODECOV"
                                "_TOKEN }}\n",
    "model/tokenizer_config.json": "{\"eos_token\": \"</s>\", \"pad_token\": \"[PAD]\","
                                   " \"model_max_length\": 4096}\n",
    "setup.cfg": "[db]\npassword = password123\nsecret_key = dev-secret-key-1\n",
    "app.toml": "[auth]\napi_key = \"your-api-key-here\"\ntoken = \"xxxxxxxx1234\"\n",
    "docs/setup.md": "# Setup\n\nIn config/database.yml:\n\n    password: Xk9#mQ2vLp\n",
    "infra/terraform.tfvars.example": "db_password = \"s3cr3tValue9\"\nregion = \"eu-west-1\"\n",
}

#: The same forms with a real-looking value, and Terraform's variable files: left out.
CONFIG_SECRETS = {
    "config/database.yml": "production:\n  adapter: postgresql\n  database: app\n"
                           "  username: app\n  password: Xk9#mQ2vLp\n",
    "config/app.ini": "[database]\nhost = db.internal\ndb_password = \"s3cr3tValue9\"\n",
    "settings.toml": "[oauth]\nclient_id = \"web\"\nclient_secret = \"9f8e7d6c5b4a3f2e1d0c\"\n",
    "src/main/resources/application.properties": "spring.datasource.username=app\n"
                                                 "spring.datasource.password=Pr0dDb!2024x\n",
    "config/appsettings.json": "{\"Smtp\": {\"Host\": \"mail\", \"apiKey\": \"k7Q2m9X4p1Z8\"}}\n",
    "stack/template.yaml": "Resources:\n  Db:\n    Type: AWS::RDS::DBInstance\n    Properties:\n"
                           "      MasterUserPassword: Zq8Rw3Xv5Ty1\n",
    "infra/terraform.tfvars": "region = \"eu-west-1\"\n",
    "infra/prod.auto.tfvars": "db_password = \"s3cr3tValue9\"\n",
    "infra/vars.tfvars.json": "{\"region\": \"eu-west-1\"}\n",
}


def test_config_credentials_are_left_out_samples_are_not(tmp_path: Path) -> None:
    """`password: Xk9#mQ2vLp` in config/database.yml and `db_password = "s3cr3tValue9"` in an
    INI were indexed and served (the .env line rule reads upper-case names only); a
    `.tfvars` was read as text. The samples beside them stay indexed."""
    db = index_leaving_out_secrets(tmp_path, {**CONFIG_SAMPLES, **CONFIG_SECRETS},
                                   CONFIG_SAMPLES, len(CONFIG_SECRETS), "--hidden")
    for value in ("Xk9", "s3cr3tValue9", "9f8e7d6c5b4a3f2e1d0c"):
        found = run_cli("search", value, "--db", str(db), "--k", "10", cwd=tmp_path)
        assert found.returncode == 0, found.stderr
        assert not any(f"proj/{path}:" in found.stdout for path in CONFIG_SECRETS), found.stdout


#: Python that sets SECRET_KEY: only a real-looking literal leaves the file out.
DJANGO_KEY = "q8#v!x2@m4z7k1^p0w3e6r9t5y8u2i4o7l1j3h6g9f2d5s8a0"
SETTINGS_SAMPLES = {
    "template/settings.py": f"SECRET_KEY = 'django-insecure-{DJANGO_KEY}'\nDEBUG = True\n",
    "envsite/settings.py": "import os\n\nSECRET_KEY = os.environ['DJANGO_SECRET_KEY']\n",
    "flaskr/__init__.py": "def create_app():\n    app.config.from_mapping(SECRET_KEY='dev')\n",
    "tests/settings.py": "SECRET_KEY = 'django_tests_secret_key'\n",
    "flaskr/config.py": "class Config:\n    SECRET_KEY = 'development key'\n",
    "tests/test_signing.py": "def test_sign():\n    secret_key = 'k7Q2m9X4p1Z8abcd'\n"
                             "    assert sign(b'x', secret_key)\n",
}
SETTINGS_SECRETS = {
    "mysite/settings.py": f"INSTALLED_APPS = ['blog']\n\nSECRET_KEY = '{DJANGO_KEY}'\n"
                          "DEBUG = False\n",
    "web/app.py": "app = Flask(__name__)\napp.config['SECRET_KEY'] = "
                  "'a8f5f167f44f4964e6c998dee827110c'\n",
    "shop/__init__.py": "def create_app():\n    app = Flask(__name__)\n"
                        "    app.config.from_mapping(SECRET_KEY='Zx81vQ0pLm27Rt5c')\n",
}


def test_a_real_django_secret_key_leaves_its_settings_out(tmp_path: Path) -> None:
    """A deployment's settings.py with its SECRET_KEY (it signs every session) was indexed:
    code keeps its keys as samples. It is left out as WordPress's wp-config.php is, and named
    on stderr; Django's template value (`django-insecure-...`), a key read from the
    environment and the test and tutorial samples stay."""
    tmp = tmp_path
    index_leaving_out_secrets(tmp, {**SETTINGS_SAMPLES, **SETTINGS_SECRETS}, SETTINGS_SAMPLES,
                              len(SETTINGS_SECRETS))
    again = run_cli("index", "proj", "--no-vectors", "--verbose", cwd=tmp)
    assert "skipped proj/mysite/settings.py: may hold secrets" in again.stderr, again.stderr


def _older_index(tmp_path: Path) -> Path:
    """An index an older ragdb built: the files today's rules leave out indexed (as an
    --include let them in, that --include then dropped from the recorded root)."""
    files = {"README.md": "# Shop\n\nThe shop's web app.\n",
             "config/database.yml": CONFIG_SECRETS["config/database.yml"],
             "mysite/settings.py": SETTINGS_SECRETS["mysite/settings.py"]}
    for rel, text in files.items():
        (tmp_path / "proj" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "proj" / rel).write_text(text)
    done = run_cli("index", "proj", "--no-vectors", "--include", "database.yml",
                   "--include", "settings.py", cwd=tmp_path)
    assert done.returncode == 0 and "3 indexed" in done.stdout, done.stdout + done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE roots SET options = json_set(options, '$.include', json('[]'))")
    return db


def test_plain_datasette_refuses_an_older_indexs_secrets(tmp_path: Path) -> None:
    """`datasette rag.db` (ragdb's plugin loaded by its entry point, not `ragdb serve`)
    served every row of an index an older ragdb built, secrets included: `ragdb serve`,
    `ragdb mcp` and `ragdb copy` refused it, Datasette did not. Its start is refused in one
    line now; after `ragdb index` (which removes them) it serves."""
    db = _older_index(tmp_path)
    env = {**os.environ, "RAGDB_MODELS_DIR": str(models_dir_without_writer())}
    port = free_port()
    command = [sys.executable, "-m", "datasette", "serve", str(db), "--port", str(port)]
    refused = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=60)
    line = one_line_error(refused)
    assert "holds 2 files that may hold secrets" in line and "nothing was served" in line, line
    assert "proj/config/database.yml" in line and "proj/mysite/settings.py" in line, line

    served = run_cli("serve", "--db", str(db), "--port", str(port), cwd=tmp_path)
    assert "holds 2 files that may hold secrets" in one_line_error(served)

    cleaned = run_cli("index", cwd=tmp_path)
    assert cleaned.returncode == 0 and "2 removed" in cleaned.stdout, cleaned.stdout
    log = tmp_path / "datasette.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        wait_until_serving(process, f"http://127.0.0.1:{port}", log)
    finally:
        process.terminate()
        process.wait(timeout=30)


#: XML configs and connection strings as projects ship them, their credentials samples or
#: references: indexed. (A connection string to a local server is a developer's database, as a
#: URL's is; a config named as a sample keeps its values; a docs page shows them.)
XML_SAMPLES = {
    "maven/settings.xml": "<settings>\n  <servers>\n    <server>\n      <id>nexus</id>\n"
                          "      <username>${env.NEXUS_USER}</username>\n"
                          "      <password>${env.DB_PASS}</password>\n    </server>\n"
                          "    <server>\n      <id>local</id>\n      <password></password>\n"
                          "      <privateKey>${user.home}/.ssh/id_rsa</privateKey>\n"
                          "    </server>\n  </servers>\n</settings>\n",
    "web/Web.config": "<?xml version=\"1.0\"?>\n<configuration>\n  <connectionStrings>\n"
                      "    <add name=\"Default\" connectionString=\"Server=(localdb)\\mssqllocaldb;"
                      "Database=Shop;Trusted_Connection=True\" />\n  </connectionStrings>\n"
                      "  <appSettings>\n    <add key=\"ApiKey\" value=\"changeme\" />\n"
                      "    <add key=\"SmtpPassword\" value=\"***\" />\n  </appSettings>\n"
                      "</configuration>\n",
    "web/app.config.example": "<configuration>\n  <connectionStrings>\n    <add name=\"Default\""
                              " connectionString=\"Server=db01;User Id=sa;Password=Xk9mQ2vLp;\""
                              " />\n  </connectionStrings>\n</configuration>\n",
    "spring/beans.xml": "<beans>\n  <bean id=\"ds\" class=\"BasicDataSource\">\n"
                        "    <property name=\"password\" value=\"${jdbc.password}\"/>\n"
                        "  </bean>\n</beans>\n",
    "pom.xml": "<project>\n  <properties>\n    <db.password>${db.password}</db.password>\n"
               "  </properties>\n</project>\n",
    "android/res/layout/login.xml": "<LinearLayout>\n  <EditText android:id=\"@+id/password\""
                                    " android:inputType=\"textPassword\"\n"
                                    "    android:hint=\"@string/password\" />\n</LinearLayout>\n",
    "docs/maven.md": "# Deploying\n\nIn `~/.m2/settings.xml`:\n\n"
                     "    <password>realValue9x</password>\n",
    "cfg/appsettings.Development.json": "{\"ConnectionStrings\": {\"Default\": \"Server=localhost;"
                                        "Database=Shop;User Id=sa;Password=Xk9mQ2vLp;\"}}\n",
    "cfg/db.properties": "db.url=jdbc:sqlserver://db:1433;databaseName=shop;user=sa;"
                         "password=${DB_PASSWORD}\n",
    "cfg/compose.yml": "services:\n  api:\n    environment:\n      ConnectionStrings__Default: "
                       "\"Server=db;Database=Shop;User Id=sa;Password=Your_password123;\"\n",
    # A config key's short or letters-only value stays a sample, as the sixth round decided
    # (every such value on the corpora is one); in a connection string it is a password.
    "cfg/local.yml": "db:\n  host: db\n  password: letmein\n",
}

#: The same forms with real-looking values, and Maven's master password file: left out.
XML_SECRETS = {
    "ci/settings.xml": "<settings>\n  <servers>\n    <server>\n      <id>internal-repo</id>\n"
                       "      <username>deployer</username>\n"
                       "      <password>realValue9x</password>\n    </server>\n  </servers>\n"
                       "</settings>\n",
    "ci/maven-settings.xml": "<settings><servers><server><id>central</id>"
                             "<password>{jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=}</password>"
                             "</server></servers></settings>\n",
    "ci/settings-security.xml": "<settingsSecurity>\n  <master>{nDpn1bE1vX4HABCDEFGHIJKLMNOP+"
                                "q0sD2mAs=}</master>\n</settingsSecurity>\n",
    "web/web.config": "<?xml version=\"1.0\"?>\n<configuration>\n  <connectionStrings>\n"
                      "    <add name=\"Default\" connectionString=\"Server=db01;Database=Shop;"
                      "User Id=sa;Password=Xk9mQ2vLp;\" providerName=\"System.Data.SqlClient\" />\n"
                      "  </connectionStrings>\n</configuration>\n",
    "web/App.config": "<configuration>\n  <appSettings>\n"
                      "    <add key=\"StripeApiKey\" value=\"k7Q2m9X4p1Z8\" />\n"
                      "  </appSettings>\n</configuration>\n",
    "spring/datasource.xml": "<beans>\n  <bean id=\"ds\" class=\"BasicDataSource\">\n"
                             "    <property name=\"password\" value=\"Pr0dDb2024x\"/>\n"
                             "  </bean>\n</beans>\n",
    "hibernate.cfg.xml": "<hibernate-configuration>\n  <session-factory>\n"
                         "    <property name=\"hibernate.connection.password\">Zq8Rw3Xv5Ty1"
                         "</property>\n  </session-factory>\n</hibernate-configuration>\n",
    "tools/ldap.xml": "<ldap>\n  <server url=\"ldaps://ldap.corp\" bindDn=\"cn=svc\""
                      " password=\"Lq4Tz8Wn2Vc6\" />\n</ldap>\n",
    "cfg/appsettings.json": "{\n  \"ConnectionStrings\": {\"Default\": \"Server=db;User Id=sa;"
                            "Password=Xk9mQ2vLp;\"},\n  \"Logging\": {\"LogLevel\": "
                            "{\"Default\": \"Information\"}}\n}\n",
    "cfg/jdbc.properties": "db.url=jdbc:sqlserver://prod-db:1433;databaseName=shop;user=sa;"
                           "password=hunter2\n",
    "cfg/app.yaml": "database:\n  url: \"Host=db;Username=app;Password=Zq8Rw3Xv5Ty1;"
                    "Database=shop\"\n",
}


def test_xml_config_and_connection_string_credentials_are_left_out(tmp_path: Path) -> None:
    """Maven's settings.xml with `<password>realValue9x</password>` (or its `{...}` encrypted
    form, which settings-security.xml's master password opens), a web.config's
    connectionString with `Password=Xk9mQ2vLp`, Spring's and Hibernate's `name="password"`
    properties and a ConnectionStrings entry in appsettings.json were indexed and served: the
    config rule read `key: value` lines only. The references, placeholders, local databases,
    samples and docs beside them stay indexed."""
    db = index_leaving_out_secrets(tmp_path, {**XML_SAMPLES, **XML_SECRETS}, XML_SAMPLES,
                                   len(XML_SECRETS))
    for value in ("realValue9x", "Xk9mQ2vLp", "Pr0dDb2024x", "Zq8Rw3Xv5Ty1", "k7Q2m9X4p1Z8",
                  "Lq4Tz8Wn2Vc6", "hunter2", "jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u"):
        found = run_cli("search", value, "--db", str(db), "--k", "20", cwd=tmp_path)
        assert found.returncode == 0, found.stderr
        assert not any(f"proj/{path}:" in found.stdout for path in XML_SECRETS), found.stdout


#: A config's `secret_key` (Django's and Flask's setting as a YAML or INI key, .NET's
#: `SecretKey`): its name ends in `key`, not in the word `secret`, so the config rule did not
#: read it.
SECRET_KEY_SAMPLES = {
    "setup.cfg": "[app]\nsecret_key = dev-secret-key-1\n",
    "deploy/values.yml": "app:\n  secret_key: ${SECRET_KEY}\n  secret_key_file: /run/secrets/k1\n",
}
SECRET_KEY_SECRETS = {
    "config/settings.yml": "production:\n  secret_key: 9f8e7d6c5b4a3f2e1d0c\n",
    "appsettings.json": "{\"Jwt\": {\"Issuer\": \"shop\", \"SecretKey\": \"Qm4vT9xK2pL7wR3z\"}}\n",
    "conf/app.xml": "<app>\n  <secretKey>Hz5nB8cV1mX4qW7e</secretKey>\n</app>\n",
}


def test_a_secret_key_in_a_config_is_left_out(tmp_path: Path) -> None:
    """`secret_key: 9f8e7d6c5b4a3f2e1d0c` in a YAML, an appsettings.json's `SecretKey` and an
    XML `<secretKey>` were indexed: a credential's name had to end in `secret`, `password`,
    `token` or an API, access or private key. A sample, a reference and a path stay."""
    db = index_leaving_out_secrets(tmp_path, {**SECRET_KEY_SAMPLES, **SECRET_KEY_SECRETS},
                                   SECRET_KEY_SAMPLES, len(SECRET_KEY_SECRETS))
    found = run_cli("search", "9f8e7d6c5b4a3f2e1d0c", "--db", str(db), cwd=tmp_path)
    assert found.returncode == 0 and "settings.yml" not in found.stdout, found.stdout


def test_serve_refuses_an_older_index_holding_an_xml_or_connection_string_secret(
        tmp_path: Path) -> None:
    """An index an older ragdb built holds a web.config's connection string, Maven's
    settings.xml and its settings-security.xml: `ragdb serve` refuses it in one line naming
    them, as it does an older index's .env (secrets_held judges stored chunks by these rules)."""
    held = ("web/web.config", "ci/settings.xml", "ci/settings-security.xml",
            "cfg/appsettings.json")
    files = {"README.md": "# Shop\n\nThe shop's web app.\n",
             **{rel: XML_SECRETS[rel] for rel in held}}
    write_corpus(tmp_path / "proj", files)
    done = run_cli("index", "proj", "--no-vectors", "--include", "*.config", "--include",
                   "*.xml", "--include", "*.json", cwd=tmp_path)
    assert done.returncode == 0 and "5 indexed" in done.stdout, done.stdout + done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE roots SET options = json_set(options, '$.include', json('[]'))")
    served = run_cli("serve", "--db", str(db), "--port", str(free_port()), cwd=tmp_path)
    line = one_line_error(served)
    assert "holds 4 files that may hold secrets" in line, line
    cleaned = run_cli("index", cwd=tmp_path)
    assert cleaned.returncode == 0 and "4 removed" in cleaned.stdout, cleaned.stdout


#: What the sixth round left open: a signing or encryption key by its name, a plist's
#: `<key>password</key>`, and ODBC's braced `Pwd={...}`. Samples and templates beside them.
LEFT_OPEN_SAMPLES = {
    "config/jwt.yml": "jwt:\n  signing_key: ${JWT_SIGNING_KEY}\n  signing_key_file: /run/k1\n",
    "config/crypto.toml": "[storage]\nencryption_key = \"changeme\"\n",
    "ios/Settings.plist": "<plist><dict>\n  <key>password</key>\n  <string></string>\n"
                          "  <key>apiToken</key>\n  <string>your-api-token</string>\n"
                          "</dict></plist>\n",
    "odbc/template.ini": "[db]\nconn = Driver={ODBC Driver 18};Server=db.corp;Uid=app;"
                         "Pwd={password};\n",
}
LEFT_OPEN_SECRETS = {
    "config/auth.yml": "jwt:\n  issuer: shop\n  signing_key: 8f2kQ9xLm4Vb7Tz1\n",
    "config/storage.toml": "[storage]\nencryption_key = \"a8F3kLp0Qz9Xc2Vb\"\n",
    "deploy/prod.env.list": "JWT_SIGNING_KEY=k9Fz2Lq8\n",
    "ios/Info.plist": "<plist><dict>\n  <key>CFBundleName</key>\n  <string>Shop</string>\n"
                      "  <key>StripeAPIKey</key>\n  <string>Wq7Lm2Zx9Pk4Tv1</string>\n"
                      "</dict></plist>\n",
    "odbc/prod.ini": "[db]\nconn = Driver={ODBC Driver 18};Server=db.corp;Uid=app;"
                     "Pwd={Xk9;mQ2vLp};\n",
}


def test_signing_keys_plist_credentials_and_odbc_braced_passwords_are_left_out(
        tmp_path: Path) -> None:
    """`signing_key: 8f2kQ9xLm4Vb7Tz1`, `encryption_key = "a8F3..."`, a `.env`-style
    `JWT_SIGNING_KEY=`, an Info.plist's `<key>StripeAPIKey</key><string>...</string>` and ODBC's
    `Pwd={Xk9;mQ2vLp}` were indexed: the names were not a credential's, a plist names its value
    in the element before it, and the braces read as a reference. References, placeholders and
    empty values stay indexed."""
    db = index_leaving_out_secrets(tmp_path, {**LEFT_OPEN_SAMPLES, **LEFT_OPEN_SECRETS},
                                   LEFT_OPEN_SAMPLES, len(LEFT_OPEN_SECRETS))
    for value in ("8f2kQ9xLm4Vb7Tz1", "Wq7Lm2Zx9Pk4Tv1", "mQ2vLp"):
        found = run_cli("search", value, "--db", str(db), "--k", "20", cwd=tmp_path)
        assert found.returncode == 0, found.stderr
        assert not any(f"proj/{path}:" in found.stdout for path in LEFT_OPEN_SECRETS), found.stdout
