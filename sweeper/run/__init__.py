"""A run of a sweep: the runner (launch by launch, measurement by measurement), versions, the progress view."""
