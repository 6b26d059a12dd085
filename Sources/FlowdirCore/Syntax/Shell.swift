/// Commands flowdir suggests for copying (in await files, `flowdir inbox`,
/// hints and errors) are quoted here, and only here, so that pasted into
/// a POSIX shell each word is read back exactly — a path, a node id or a
/// choice with a space, a quote, `$(…)` or a line break in it included.
public enum Shell {
    /// `word` as it is when every character is one no shell treats
    /// specially; otherwise in single quotes, each `'` as `'\''`.
    public static func quote(_ word: String) -> String {
        if !word.isEmpty, word.unicodeScalars.allSatisfy(isPlain) { return word }
        return "'" + word.replacing("'", with: #"'\''"#) + "'"
    }

    /// A command line, each word quoted.
    public static func command(_ words: [String]) -> String {
        words.map(quote).joined(separator: " ")
    }

    /// Letters and digits of ASCII, and `_ @ % + = : , . / -`.
    static func isPlain(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        default: "_@%+=:,./-".unicodeScalars.contains(c)
        }
    }
}
