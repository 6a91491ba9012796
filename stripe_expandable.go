package idempotency

import (
	"reflect"

	"github.com/stripe/stripe-go/v82"
)

// stripeExpandable lists stripe-go's expandable resources: their
// UnmarshalJSON takes an id string, or else decodes the object into the
// struct exactly as a type without the method would. The fast decoder
// decodes their objects field by field instead of calling the method
// (which runs json.Unmarshal, validation included, over the object again).
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
