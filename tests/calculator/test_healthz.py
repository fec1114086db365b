from unittest import mock

import pytest
from django.db.utils import OperationalError


@pytest.mark.django_db
def test_healthz_is_200_when_the_database_answers(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "cache": "ok"}


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_does_not(client):
    with mock.patch("calculator.web.views.connection.cursor", side_effect=OperationalError("down")):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "unreachable"
