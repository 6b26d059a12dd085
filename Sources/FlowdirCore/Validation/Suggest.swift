/// "Did you mean …?" for a misspelt name.
public enum Suggest {
    /// The candidate closest to `word`, if it is close enough to be a typo.
    public static func closest(to word: String, in candidates: some Sequence<String>) -> String? {
        let w = Array(word.lowercased().unicodeScalars)
        var best: (String, Int)?
        for candidate in candidates {
            let d = distance(w, Array(candidate.lowercased().unicodeScalars))
            if d <= max(1, w.count / 3), d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }

    public static func hint(for word: String, in candidates: some Sequence<String>) -> String? {
        closest(to: word, in: candidates).map { "did you mean '\($0)'?" }
    }

    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
