package decode

import (
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/stripe/stripe-go/v82"
)

// stripeModule is the module whose expandable resources the fast path
// decodes field by field.
const stripeModule = "github.com/stripe/stripe-go/v82"

// verifiedStripeVersions are the versions of stripeModule whose source
// stripeExpandable was checked against. The bypass relies on the body of
// each listed type's UnmarshalJSON, which any release may change, so a
// binary linking any other version (a later v82.x a user's go.mod selects,
// a fork, a local copy) decodes them through their UnmarshalJSON.
// TestStripeExpandableMatchesSource fails when go.mod pins a version not
// listed here: bumping stripe-go means running it against the new source
// and then adding the version.
var verifiedStripeVersions = []string{"v82.5.1"}

// stripeExpandable lists stripe-go's expandable resources: their
// UnmarshalJSON takes an id string, or else decodes the object into the
// struct exactly as a type without the method would. The fast decoder
// decodes their objects field by field instead of calling the method
// (which runs json.Unmarshal, validation included, over the object again),
// when stripeBypass allows it.
// TestStripeExpandableMatchesSource reads stripe-go's source and fails
// when this list and the methods that have that exact body differ.
var stripeExpandable = map[reflect.Type]bool{
	reflect.TypeFor[stripe.Account]():                              true,
	reflect.TypeFor[stripe.Application]():                          true,
	reflect.TypeFor[stripe.ApplicationFee]():                       true,
	reflect.TypeFor[stripe.BalanceTransaction]():                   true,
	reflect.TypeFor[stripe.BankAccount]():                          true,
	reflect.TypeFor[stripe.BillingCreditBalanceTransaction]():      true,
	reflect.TypeFor[stripe.BillingCreditGrant]():                   true,
	reflect.TypeFor[stripe.BillingMeter]():                         true,
	reflect.TypeFor[stripe.BillingPortalConfiguration]():           true,
	reflect.TypeFor[stripe.Card]():                                 true,
	reflect.TypeFor[stripe.Charge]():                               true,
	reflect.TypeFor[stripe.CheckoutSession]():                      true,
	reflect.TypeFor[stripe.ClimateProduct]():                       true,
	reflect.TypeFor[stripe.ConnectCollectionTransfer]():            true,
	reflect.TypeFor[stripe.Coupon]():                               true,
	reflect.TypeFor[stripe.CreditNote]():                           true,
	reflect.TypeFor[stripe.Customer]():                             true,
	reflect.TypeFor[stripe.CustomerBalanceTransaction]():           true,
	reflect.TypeFor[stripe.CustomerCashBalanceTransaction]():       true,
	reflect.TypeFor[stripe.Discount]():                             true,
	reflect.TypeFor[stripe.Dispute]():                              true,
	reflect.TypeFor[stripe.EntitlementsFeature]():                  true,
	reflect.TypeFor[stripe.FeeRefund]():                            true,
	reflect.TypeFor[stripe.File]():                                 true,
	reflect.TypeFor[stripe.FinancialConnectionsAccountOwnership](): true,
	reflect.TypeFor[stripe.IdentityVerificationReport]():           true,
	reflect.TypeFor[stripe.Invoice]():                              true,
	reflect.TypeFor[stripe.IssuingAuthorization]():                 true,
	reflect.TypeFor[stripe.IssuingCard]():                          true,
	reflect.TypeFor[stripe.IssuingCardholder]():                    true,
	reflect.TypeFor[stripe.IssuingDispute]():                       true,
	reflect.TypeFor[stripe.IssuingPersonalizationDesign]():         true,
	reflect.TypeFor[stripe.IssuingPhysicalBundle]():                true,
	reflect.TypeFor[stripe.IssuingToken]():                         true,
	reflect.TypeFor[stripe.IssuingTransaction]():                   true,
	reflect.TypeFor[stripe.Mandate]():                              true,
	reflect.TypeFor[stripe.PaymentIntent]():                        true,
	reflect.TypeFor[stripe.PaymentLink]():                          true,
	reflect.TypeFor[stripe.PaymentMethod]():                        true,
	reflect.TypeFor[stripe.Payout]():                               true,
	reflect.TypeFor[stripe.Plan]():                                 true,
	reflect.TypeFor[stripe.Price]():                                true,
	reflect.TypeFor[stripe.Product]():                              true,
	reflect.TypeFor[stripe.PromotionCode]():                        true,
	reflect.TypeFor[stripe.Quote]():                                true,
	reflect.TypeFor[stripe.Refund]():                               true,
	reflect.TypeFor[stripe.ReserveTransaction]():                   true,
	reflect.TypeFor[stripe.Review]():                               true,
	reflect.TypeFor[stripe.SetupAttempt]():                         true,
	reflect.TypeFor[stripe.SetupIntent]():                          true,
	reflect.TypeFor[stripe.ShippingRate]():                         true,
	reflect.TypeFor[stripe.Subscription]():                         true,
	reflect.TypeFor[stripe.SubscriptionSchedule]():                 true,
	reflect.TypeFor[stripe.TaxCode]():                              true,
	reflect.TypeFor[stripe.TaxDeductedAtSource]():                  true,
	reflect.TypeFor[stripe.TaxID]():                                true,
	reflect.TypeFor[stripe.TaxRate]():                              true,
	reflect.TypeFor[stripe.TerminalLocation]():                     true,
	reflect.TypeFor[stripe.TestHelpersTestClock]():                 true,
	reflect.TypeFor[stripe.Topup]():                                true,
	reflect.TypeFor[stripe.Transfer]():                             true,
	reflect.TypeFor[stripe.TransferReversal]():                     true,
	reflect.TypeFor[stripe.TreasuryTransaction]():                  true,
}

func isStripeExpandable(t reflect.Type) bool { return stripeExpandable[t] }

func noneExpandable(reflect.Type) bool { return false }

// stripeBypass reports whether this binary links a stripe-go release that
// stripeExpandable was verified against. Read once: the answer cannot
// change while the process runs.
var stripeBypass = sync.OnceValue(func() bool {
	info, ok := debug.ReadBuildInfo()
	return stripeVerified(info, ok, stripeSourceFile())
})

// stripeVerified reports whether the build information shows
// stripeModule at a verified version. A replacement counts only when it
// is the same module at a verified version: a local directory or a fork
// may hold any source. No build information (ok false: a binary built
// without module support) means no bypass.
//
// A test binary has build information without the list of dependencies
// (golang/go#76926). There, and only there, the version is read from
// sourceFile, the path the compiler recorded for a stripe-go source file:
// the go command builds a module it downloaded from
// ".../<module>@<version>/" (or "<module>@<version>/" with -trimpath),
// while a replacement by a directory or a vendored copy has no version in
// its path. (A fork whose module path ends in stripe-go's would pass: a
// test binary is built by the developer who chose the fork.)
func stripeVerified(info *debug.BuildInfo, ok bool, sourceFile string) bool {
	if !ok || info == nil {
		return false
	}
	if len(info.Deps) == 0 {
		return verifiedSourcePath(sourceFile)
	}
	for _, m := range info.Deps {
		if m.Path != stripeModule {
			continue
		}
		if m.Replace != nil {
			m = m.Replace // the source the binary was built from
			if m.Path != stripeModule {
				return false
			}
		}
		return slices.Contains(verifiedStripeVersions, m.Version)
	}
	return false
}

// verifiedSourcePath reports whether file is in a verified version of
// stripeModule as the go command lays out a downloaded module.
func verifiedSourcePath(file string) bool {
	file = filepath.ToSlash(file)
	for _, v := range verifiedStripeVersions {
		dir := stripeModule + "@" + v + "/"
		if strings.HasPrefix(file, dir) || strings.Contains(file, "/"+dir) {
			return true
		}
	}
	return false
}

// stripeSourceFile returns the path the compiler recorded for the source
// of stripe.ParseID, which every expandable UnmarshalJSON calls.
func stripeSourceFile() string {
	f := runtime.FuncForPC(reflect.ValueOf(stripe.ParseID).Pointer())
	if f == nil {
		return ""
	}
	file, _ := f.FileLine(f.Entry())
	return file
}

// expandableFor returns the plain predicate New gets: stripeExpandable
// when the bypass is on, none otherwise.
func expandableFor(bypass bool) func(reflect.Type) bool {
	if bypass {
		return isStripeExpandable
	}
	return noneExpandable
}
