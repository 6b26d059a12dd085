/// "Did you mean …?" for a misspelt name.
public enum Suggest {
    /// The candidate closest to `word`, if it is close enough to be a typo.
    public static func closest(to word: String, in candidates: some Sequence<String>) -> String? {
        let w = Array(word.lowercased().unicodeScalars)
        guard w.count >= 3 else { return nil }  // too short for a guess to help
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

    /// Edit distance where swapping two neighbours counts as one edit
    /// (optimal string alignment), so `laod` is one typo away from `load`.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
