import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// `.flowdir/requests/`: a request file that cannot be handled is set
/// aside in `rejected/` with why, and its requester is answered; it is
/// never read again (issue #41: `duration: 1e19` crashed every later run).
@Suite(.tags(.medium)) struct RequestBoxTests {
    func decode(_ text: String) -> Result<PersonRequest, RequestBox.Unreadable> {
        RequestBox.decode(Array(text.utf8), id: "r1")
    }

    @Test func valuesAreCheckedWhereTheFileIsRead() throws {
        #expect(try decode("verb: snooze\nnode: pick\nby: ann\nduration: 3600\n").get().duration == 3600)
        for bad in ["1e19", "1e300", ".inf", ".nan", "-5", "0", "3155760001", "\"an hour\""] {
            guard case .failure(let why) = decode("verb: snooze\nnode: pick\nby: ann\nduration: \(bad)\n") else {
                Issue.record("duration \(bad) was taken")
                continue
            }
            #expect(why.reason.contains("duration"), "\(why)")
        }
        for (text, says) in [("node: pick\n", "verb"), ("verb: explode\nnode: a\n", "explode"), ("verb: snooze\n", "node"),
                             ("verb: answer\nnode: a\nfiles: [../../../etc/passwd]\n", "files"),
                             ("verb: answer\nnode: a\nfiles: [\"a.b.png\\nFlowdir-Event: x\"]\n", "files"),
                             ("verb: skip\nnode: \"a\\nb\"\n", "control"), ("- just\n- a list\n", "mapping"), ("\u{0}\u{1}", "text file")] {
            guard case .failure(let why) = decode(text) else {
                Issue.record("taken: \(text)")
                continue
            }
            #expect(why.reason.contains(says), "\(why)")
        }
    }

    @Test func anUnhandledRequestIsSetAsideWithWhyAndAnswered() throws {
        let dir = try TemporaryDirectory()
        let requests = dir.path + "/.flowdir/requests"
        try dir.write(".flowdir/requests/bad.request.yaml", "verb: snooze\nnode: pick\nby: ann\nduration: 1e19\n")
        try dir.write(".flowdir/requests/good.request.yaml", "verb: skip\nnode: pick\nby: ann\n")
        // One a flowdir took and was stopped while carrying out.
        try dir.write(".flowdir/requests/crashed.taken.yaml", "verb: skip\nnode: pick\nby: ann\n")
        let pending = RequestBox.pending(dir.path)
        #expect(pending.map(\.id) == ["good"])
        let rejected = try FileManager.default.contentsOfDirectory(atPath: requests + "/rejected").sorted()
        #expect(rejected == ["bad.request.yaml", "bad.why.txt", "crashed.request.yaml", "crashed.why.txt"])
        let why = try String(contentsOfFile: requests + "/rejected/bad.why.txt", encoding: .utf8)
        #expect(why.contains("duration: 1e+19"), "\(why)")
        let result = try #require(RequestBox.takeResult("bad", in: dir.path))
        #expect(!result.ok && result.message.contains("rejected/bad.request.yaml"), "\(result)")
        #expect(RequestBox.takeResult("crashed", in: dir.path)?.message.contains("stopped while carrying") == true)
        // Read again: nothing of them comes back.
        #expect(RequestBox.pending(dir.path).map(\.id) == ["good"])
        // Taken, it is no longer pending; finished, it is gone.
        #expect(RequestBox.take("good", in: dir.path))
        #expect(RequestBox.pending(dir.path).isEmpty)
        RequestBox.finish("good", in: dir.path, RequestResult(ok: true, message: "Skipped"))
        #expect(!FileManager.default.fileExists(atPath: requests + "/good.taken.yaml"))
        #expect(RequestBox.takeResult("good", in: dir.path)?.ok == true)
    }

    @Test func aRequestRoundTrips() throws {
        var r = PersonRequest(id: "x", verb: .answer, node: "pick", by: "Ann <ann@example.org>", duration: 90,
                              choice: .string("b"), approve: true, params: [ParamEntry(key: "steps", value: .int(3))],
                              files: ["pick.image.png"], force: true)
        r.downstream = true
        #expect(try RequestBox.decode(Array(RequestBox.encode(r).utf8), id: "x").get() == r)
    }
}
