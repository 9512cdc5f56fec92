
ByJ dvè