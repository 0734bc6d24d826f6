package handlers

// The budgets the tests of handlers_test measure against.
var (
	RecoveryBurst      = recoveryBudget.burst
	RecoveryTotalEvery = recoveryTotal.every
	RecoveryTotalBurst = recoveryTotal.burst
)
