// An instance's .gitattributes (the lines marking large files, docs/storage.md) as a sync or a
// person may leave it, its lines also taken as the paths to mark: the paths flowdir's lines mark
// are the ones it wrote, a person's own lines are kept, writing again changes nothing, and each
// path's pattern names that path back.
// fuzz-modules: FlowdirCore
// fuzz-dict: lfs
@testable import FlowdirCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    // The input as a .gitattributes, its lines as the paths to mark.
    let text = String(decoding: bytes, as: UTF8.self)
    // By bytes: as Characters "\r\n" is one, and a path would hold a line break
    // (no path flowdir marks has one: its names are checked).
    let paths = Set(bytes.split(separator: 0x0A).prefix(16).filter { !$0.contains(0x0D) }.map { String(decoding: $0, as: UTF8.self) }
        .filter { !$0.isEmpty && !$0.utf8.contains(0x0A) && !$0.utf8.contains(0x0D) })
    for path in paths {
        require(LFSAttributes.unescape(LFSAttributes.escape(path)) == path, "the pattern of \(quoted(path)) does not name it back")
    }
    _ = LFSAttributes.paths(in: text)
    if let written = LFSAttributes.text(text, marking: paths) {
        require(LFSAttributes.paths(in: written) == paths, "a .gitattributes written marks other paths: \(quoted(written, limit: 400))")
        // Written again, nothing changes (`text` may still offer the same text when a
        // person's own line ends as flowdir's do, e.g. `*.psd filter=lfs diff=lfs merge=lfs -text`).
        let again = LFSAttributes.text(written, marking: paths)
        require(again == nil || again == written, "a .gitattributes written is rewritten otherwise: \(quoted(written, limit: 400))")
        // Lines by their bytes: as Characters, "\r\n" is one, not a line's end.
        func lines(_ s: String) -> [String] { s.utf8.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) } }
        let kept = Set(lines(written))
        for line in lines(text) where !(line.hasSuffix(LFSAttributes.suffix) && LFSAttributes.unescape(String(line.dropLast(LFSAttributes.suffix.count))) != nil) {
            require(kept.contains(line), "a person's line \(quoted(line)) is lost")
        }
    }
    return 0
}
