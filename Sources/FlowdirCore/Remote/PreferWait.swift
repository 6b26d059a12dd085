/// Replicate's sync mode: `Prefer: wait` (or `Prefer: wait=N`, N whole
/// seconds from 1 to 60) on a create holds the answer until the prediction
/// ends or N seconds pass, then answers the prediction as it is then.
/// The header is RFC 7240's `Prefer`: comma-separated preferences, each
/// `name[=value]` with `;`-parameters, names case-insensitive.
public enum PreferWait {
    /// The longest wait Replicate holds a create for.
    public static let longest = 60

    /// The header value a client sends to wait up to `seconds`; nil for 0 (no wait).
    public static func header(seconds: Int) -> String? {
        seconds > 0 ? "wait=\(min(seconds, longest))" : nil
    }

    /// The seconds the `Prefer` values ask a create to be held, at most
    /// `longest`: a bare `wait` is `longest`; nil when none asks to wait (or
    /// its value is not whole seconds, `wait=0` included: a preference a
    /// server does not understand is ignored, as RFC 7240 says).
    public static func seconds(_ values: [String], longest: Int = PreferWait.longest) -> Int? {
        for value in values {
            for item in value.split(separator: ",") {
                let preference = item.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let parts = preference.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts[0].trimmed(" \t").lowercased() == "wait" else { continue }
                guard parts.count == 2 else { return longest }
                var text = parts[1].trimmed(" \t")
                if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
                guard !text.isEmpty, text.utf8.count <= 6, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let n = Int(text), n > 0 else { return nil }
                return min(n, longest)
            }
        }
        return nil
    }
}
