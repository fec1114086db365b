"""The language switcher works from every language to every language and keeps the inputs.

Issue 17 (1): on a /es/ page every link redirected back to /es/, because the target was resolved
in the cookie's language. Expected URLs follow the project's prefix scheme: English unprefixed,
every other language under /<code>/ (settings.LANGUAGES, prefix_default_language=False).
"""

import re

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db

CODES = [code for code, _name in settings.LANGUAGES]
QUERY = "?model=qwen2-7B&seq=8192&mode=lora"


def prefix(code: str) -> str:
    return "" if code == "en" else f"/{code}"


@pytest.mark.parametrize("source", CODES)
@pytest.mark.parametrize("target", CODES)
def test_switch_from_every_language_to_every_language(client, source, target):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = source
    page = f"{prefix(source)}/{QUERY}"
    response = client.get(f"/lang/{target}", {"next": page})
    assert response.status_code == 302
    assert response["Location"] == f"{prefix(target)}/{QUERY}"
    opened = client.get(response["Location"])
    assert f'<html lang="{target}"' in opened.content.decode()


def test_links_on_a_spanish_page_point_to_each_language_with_the_inputs(client):
    body = client.get(f"/es/{QUERY}").content.decode()
    targets = dict(re.findall(r'href="/lang/([\w-]+)\?next=([^"]+)"', body))
    assert set(targets) == set(CODES)
    response = client.get("/lang/en", {"next": "/es/fits/?seq=2048"})
    assert response["Location"] == "/fits/?seq=2048"


@pytest.mark.parametrize(
    "next_path",
    [
        "/es//evil.example/path",  # the review's: /es stripped leaves //evil.example/path
        "/de//evil.example",
        "/zh-hans//evil.example",
        "//evil.example",
        "/\\evil.example",
        "https://evil.example/",
        "/\t/evil.example",
    ],
)
@pytest.mark.parametrize("language", ["en", "es", "xx"])
def test_the_switcher_never_redirects_off_this_site(client, next_path, language):
    # Finding 6 of the security review of 654b6a2: Location: //evil.example/path.
    location = client.get(f"/lang/{language}", {"next": next_path})["Location"]
    assert location.startswith("/")
    assert not location.startswith(("//", "/\\"))
    assert "\t" not in location
