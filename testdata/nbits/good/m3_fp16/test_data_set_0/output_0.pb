
BYJ`«LhLÀÉHH¹F\LULq7êA	ÈÜA=HNÉ™EžKÍÀú@ÅÇÖÉôD"I2°:XÉaÃÖ¸F¼ICD5À0É74GC]4ˆÉ³±“À‡LH$Àx¶hAJ¢?”ÃLÆ