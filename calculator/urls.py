from django.urls import path

from calculator import views

app_name = "calculator"
urlpatterns = [
    path("", views.index, name="index"),
    path("suggest", views.suggest, name="suggest"),
    path("fits/", views.fits, name="fits"),
    path("r/", views.save_result, name="save"),
    path("r/<str:saved_id>", views.saved, name="saved"),
]
