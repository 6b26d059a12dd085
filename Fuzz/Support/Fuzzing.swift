#if canImport(Glibc)
import Glibc
#endif

// What every harness shares. A harness is one file in Fuzz/Targets/ that
// defines `LLVMFuzzerTestOneInput`; scripts/fuzz.sh compiles it with this
// file, the modules and sources its header names, and libFuzzer.

/// libFuzzer's input as bytes.
func fuzzBytes(_ data: UnsafeRawPointer?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: data, count: size))
}

/// Stops the run when a property does not hold, saying which: libFuzzer
/// keeps the input that broke it as a crash.
func require(_ holds: Bool, _ property: @autoclosure () -> String, line: UInt = #line) {
    guard !holds else { return }
    fatalError("fuzz property broken: \(property())", line: line)
}

/// The input cut at the first `count - 1` line breaks, for harnesses that
/// take several fields (headers, then a body: the last field may hold
/// anything). Missing fields are empty.
func fuzzFields(_ bytes: [UInt8], count: Int) -> [[UInt8]] {
    var fields = bytes.split(separator: 0x0A, maxSplits: count - 1, omittingEmptySubsequences: false).map(Array.init)
    while fields.count < count { fields.append([]) }
    return fields
}

/// Text a harness prints into a property's message: short, one line.
func quoted(_ s: String, limit: Int = 200) -> String {
    let cut = s.unicodeScalars.count > limit ? String(String.UnicodeScalarView(s.unicodeScalars.prefix(limit))) + "…" : s
    return "\"" + cut.unicodeScalars.map { $0.value < 0x20 || $0 == "\"" ? $0.escaped(asASCII: true) : String($0) }.joined() + "\""
}
