// Git LFS pointers (what git holds in place of a large file, docs/storage.md) as a sync or a
// person may leave them: a pointer read (strictly) is written back as the very same bytes, so
// the same blob.
// fuzz-modules: FlowdirCore
// fuzz-dict: lfs
import FlowdirCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    _ = LFSPointer.looksLikePointer(bytes)
    if case .success(let p) = LFSPointer.parse(bytes) {
        require(p.bytes == bytes, "a pointer read is written back otherwise: \(quoted(p.text))")
        require(LFSPointer.parse(p.bytes) == .success(p), "a pointer written does not read back")
        require(LFSPointer.isOID(p.oid) && p.size >= 0, "a pointer with a bad oid or size was read")
        _ = p.objectPath
    }
    return 0
}
