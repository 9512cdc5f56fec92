
BxJ
(4BFJ~þ€*