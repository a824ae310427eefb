"""The credential-by-form rules (secret_files.holds_token) on what an ordinary repository ships:
a README or .env.example showing where a key goes, a docker-compose or config sample with a
development database's URL. These are indexed; the same files with a real-looking value are
left out as 'may hold secrets'. Real things: the CLI as a subprocess and its rag.db."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import index_leaving_out_secrets, run_cli

#: Samples a user meets in ordinary repositories (each was left out before: a README without
#: a Markdown name, an .env.example, a docker-compose.yml, an INI for tests).
SAMPLES = {
    "README": "Set your keys first:\n\n    export OPENAI_API_KEY=sk-...\n"
              "    export GITHUB_TOKEN=ghp_xxxxxxxxxxxx\n    export API_KEY=sk-<your key>\n",
    ".env.example": "POSTGRES_PASSWORD=postgres\nMYSQL_PASSWORD=mysql\n"
                    "DATABASE_URL=postgres://postgres:postgres@db:5432/app\n"
                    "SECRET_KEY=example\nAPI_TOKEN=test\n",
    "docker-compose.yml": "services:\n  web:\n    environment:\n"
                          "      DATABASE_URL: postgres://app:devpass@localhost:5432/app\n",
    "tests/db.ini": "[db]\nurl = mysql+pymysql://root:hunter2@127.0.0.1:3306/test\n"
                    "mirror = https://user:pw1234@mirror.example.com/simple\n",
}

#: The same forms with a value that is no placeholder: still left out.
SECRETS = {
    "deploy/app.cfg": "POSTGRES_PASSWORD=w0rkpass\n",
    "deploy/compose.yml": "DATABASE_URL: postgres://app:w0rkurl@db.internal:5432/app\n",
    "notes.txt": "export OPENAI_API_KEY=sk-w0rkkey123\n",
}


def test_readme_and_config_samples_are_indexed_real_values_are_not(tmp_path: Path) -> None:
    index_leaving_out_secrets(tmp_path, {**SAMPLES, **SECRETS}, SAMPLES, len(SECRETS),
                              "--hidden")


def test_env_templates_are_indexed_with_their_sample_values(tmp_path: Path) -> None:
    """docs/indexing.md says .env.example, .env.dist, ... are indexed: they are what a user
    copies to set a project up. Symfony's .env.dist (`APP_SECRET=ThisTokenIsNotSoSecret...`)
    and a Django template's `SECRET_KEY=django-insecure-...` were left out as secrets by the
    .env line rule; a template's values are samples by its name now. A token of a known form
    pasted into one (a GitHub token) still leaves it out."""
    templates = {
        ".env.dist": "APP_ENV=dev\nAPP_SECRET=ThisTokenIsNotSoSecretChangeIt\n"
                     "DATABASE_URL=mysql://db_user:db_password@db.internal:3306/db_name\n",
        "web/.env.example": "SECRET_KEY=django-insecure-k3y4m1x9q2\nDB_PASSWORD=s3cr3tpw\n",
    }
    leaked = {"api/.env.template": "GITHUB_TOKEN=ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2 + "\n"}
    db = index_leaving_out_secrets(tmp_path, {**templates, **leaked}, templates, 1, "--hidden")
    found = run_cli("search", "APP_SECRET", "--db", str(db), "--k", "3", cwd=tmp_path)
    assert found.returncode == 0 and "proj/.env.dist" in found.stdout, found.stdout
