# Draft: gift wrapping
#
# Not a feature yet -- product still has to decide whether gift wrapping is a
# line item or a per-order surcharge. Kept here so the discussion is not lost.
#
# Ideas:
#   - wrapping costs 2.50 per item, free above 100.00
#   - wrapped items cannot be returned unwrapped
#   - gift cards (GIFT-005) are always wrapped for free
