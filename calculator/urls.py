from django.urls import path, re_path

from calculator.web import views

app_name = "calculator"
urlpatterns = [
    path("", views.index, name="index"),
    path("suggest", views.suggest, name="suggest"),
    path("fits/", views.fits, name="fits"),
    path("r/", views.save_result, name="save"),
    # Saved ids are 22 URL-safe characters (models.new_saved_id): anything else is a 404
    # without a query (PostgreSQL refuses a NUL in one).
    re_path(r"^r/(?P<saved_id>[A-Za-z0-9_-]{22})$", views.saved, name="saved"),
]
