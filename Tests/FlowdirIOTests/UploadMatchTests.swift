@testable import FlowdirIO
import FlowdirTestSupport
import Testing

/// After a kill between sending and recording, a job is found by its input;
/// an uploaded file there is a URL. The job server gives the file's bytes at
/// it; Replicate gives a file object (size, checksums): both must match.
@Suite(.tags(.small)) struct UploadMatchTests {
    let abc = Array("abc".utf8)
    let abcSHA = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    @Test func theFilesOwnBytesMatch() {
        #expect(UploadMatch.matches(abc, abc))
        #expect(!UploadMatch.matches(Array("abd".utf8), abc))
    }

    @Test func replicatesFileObjectMatchesBySizeAndSHA256() {
        let object = """
            {"id": "f1", "name": "in.png", "content_type": "image/png", "size": 3,
             "checksums": {"sha256": "\(abcSHA)", "md5": "900150983cd24fb0d6963f7d28e17f72"},
             "urls": {"get": "https://api.replicate.com/v1/files/f1"}}
            """
        #expect(UploadMatch.matches(Array(object.utf8), abc))
        #expect(!UploadMatch.matches(Array(object.replacingOccurrences(of: abcSHA, with: String(repeating: "0", count: 64)).utf8), abc))
        #expect(!UploadMatch.matches(Array(object.replacingOccurrences(of: "\"size\": 3", with: "\"size\": 4").utf8), abc))
        // A size alone could be any file of that size.
        #expect(!UploadMatch.matches(Array(#"{"content_type": "image/png", "size": 3}"#.utf8), abc))
        // Enough of the answer is read to see the description of a small file.
        #expect(UploadMatch.limit(for: abc) >= object.utf8.count)
    }
}
