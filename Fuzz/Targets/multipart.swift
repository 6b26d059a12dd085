// multipart/form-data as the job server's files API takes it (Replicate's clients send the
// file as the part named `content`). Input: the Content-Type header, a line break, the field
// name looked for, a line break, the body. Compiled from the server's own source file, as it is.
// fuzz-sources: Sources/FlowdirJobServer/Multipart.swift
// fuzz-dict: multipart

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let fields = fuzzFields(fuzzBytes(data, size), count: 3)
    let contentType = String(decoding: fields[0], as: UTF8.self)
    let field = fields[1].isEmpty ? "content" : String(decoding: fields[1], as: UTF8.self)
    let body = fields[2]
    if let part = Multipart.file(body, contentType: contentType, field: field) {
        require(part.bytes.count <= body.count, "a part longer than the body")
        // The part's bytes are the body's, from where they start.
        require(part.bytes.isEmpty || findSlice(part.bytes, in: body), "a part's bytes are not in the body")
    }
    _ = Multipart.filename(contentType)
    return 0
}

func findSlice(_ needle: [UInt8], in hay: [UInt8]) -> Bool {
    guard needle.count <= hay.count else { return false }
    for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
    return false
}
