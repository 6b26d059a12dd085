import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Testing

/// A request file as `RequestBox.post` writes it and `pending` reads it,
/// through the pure pair the fuzz target uses (Fuzz/Targets/request.swift).
@Suite(.tags(.medium)) struct PersonRequestTests {
    @Test func everyFieldReadsBackAsWritten() throws {
        var r = PersonRequest(id: "r1", verb: .answer, node: "pick", by: "Ada <ada@example.org>", duration: 90, choice: .string("warm"),
                              approve: true, params: [ParamEntry(key: "steps", value: .int(30))], files: ["pick.image.png"], force: true)
        r.downstream = true
        r.run = 3
        let back = try PersonRequest.decode(Array(r.fileText.utf8), id: "r1", file: "r1.request.yaml", defaultBy: "someone").get()
        #expect(back == r)
    }

    @Test func whoAsksDefaultsToTheGivenPerson() throws {
        let r = try PersonRequest.decode(Array("verb: retry\nnode: a\n".utf8), id: "r2", file: "r2.request.yaml", defaultBy: "ada").get()
        #expect(r.by == "ada" && r.verb == .retry && r.node == "a" && r.id == "r2")
    }

    @Test(arguments: ["", "verb: retry\n", "node: a\n", "verb: retry\nnode: a\nrun: 0\n", "verb: retry\nnode: a\nrun: two\n", "verb: explode\nnode: a\n", "- verb\n", "verb: [retry]\nnode: a\n", "{{{"])
    func whatIsNotARequestIsNil(_ text: String) {
        #expect((try? PersonRequest.decode(Array(text.utf8), id: "r", file: "r.request.yaml", defaultBy: "ada").get()) == nil)
    }
}
