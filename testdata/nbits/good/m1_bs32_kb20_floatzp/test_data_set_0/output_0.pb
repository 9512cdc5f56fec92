	BYJ$๓าฉAC]ม4วมLHยHXด@kย*B์
bพิ•A-ะA