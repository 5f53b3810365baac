package redisstore

// SlotOf is slotOf, for the tests that compare it with the server's.
var SlotOf = slotOf
