  BoutputJ€ŽŽ•ÑÖÑÓÏÊÎÑÈÍäçêåï0?3=-|pskw’ËÐË×ÓÍÐÒÊÐéãäëã;5<=Azgvws“’‘”ÍÓÑÓÏÉÉÌÅÌãèçéà<388:vnuzr	Œ‹•ÍÓÕÖÕÎÎÐËÑæçíßä;E4='s|oqu		“’”–—ÉÌÎÏÏÇÅÈÊÏâåñíÝD5(=Lpwfls7454.VTWW[XY]XZimVYp©ÀÄ¬šmbbmj8566-PKMPX\_d_]hZavf¯Ÿ´»½f_dfb31692UPQGSZ_a^ZcegY\¼¾±³¯`mgY`5863:IQOKQbdXZbedj^`·¹­²ºfh\jW/32/7GOMQF[`^d\f^cbp¦³²¸žjmcma6:96=LSQTO€x„ºÎÏÌ¾Š}y{—˜£¤¥›
69849GLIGC€|ryÚÏÎÓÓyz€w¦¨¢ 
6;:6<IOK[L|}yËÏÂÂÌut¬¨¥ž¨2674;INKGHt|‚}zÉÓÖÖÖ|}~€yž ¤¡¦6;:6<GKGO]v{~s‚ÑÇÔÎÅƒzt‹šŸ§¨¢`c`Z]ega`\IDNBM‡ƒ™¦¼¯°§™ŽŠŒˆ_____`bbb^KEJNCŽŽŒ´²±²²‹–„Œ]]^_`accgePHFIDŽŽŒµ²±³°…Ž”]^_`bcde^_JFCIKŒŽŠ´±°²¼‰\]^^___^deMNKQS„·µ´¶¦“ŒŒŠŠŠŠŠ‰‡…„}]`[\Wndfec‹ŠŒœ¹ÃÂ½Â‰‰‰ˆ†‚~ˆ„_hcd_cfhhfŽŽ…½Å¿ºÃ‰ŠŠ‰‡„~Zf`dfcegfe’ÇÀº¹Å‡ˆ‰‰ˆ…‚€ƒ„_i]`gbegfeÂ¸¿¿Æ
Š†…†ƒ‚ˆ‡}cbebi^iddq…’’Ž˜º¼¾³´š››Ÿ¥®µ¹¶¬Ž‡‡ƒ‚nifddfgebavlpm}
’”’‘œ­¶´»´”ŠŽ‹nsuuphcce^uoums
œŸœ–¡·¾¹´®€‡Šheikhb_bfesjoim–˜”³»µ¾¹—†ˆŽŠjmmmjgdddfqjtof››™¡¯µ±°®“‡‡ˆŠtmkhggecacnmzuf		
	


		