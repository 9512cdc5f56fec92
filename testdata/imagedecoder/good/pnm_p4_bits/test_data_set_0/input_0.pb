BdataJP4
7 5
ªTZR¨