"""One module per area of alerts, each with its ALERTS list of records (exporter/alerts/model.py
Alert: everything said about one alert), assembled in exporter/alerts/rules.py."""
