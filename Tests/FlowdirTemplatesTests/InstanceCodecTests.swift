import FlowdirCore
import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// instance.yaml's errors, as a person reads them: the file named once, by
/// the diagnostic's lead, then what is wrong.
@Suite(.tags(.small)) struct InstanceCodecTests {
    static let good = "id: i1\ntitle: T\ntemplate: t.yaml\ncreatedAt: 2026-11-22T10:00:00Z\nschemaVersion: 1\n"

    func rendered(_ text: String) throws -> String? {
        let doc = try InstanceCodec.document(Array(text.utf8), file: "inst/instance.yaml").get()
        do throws(Diagnostic) {
            _ = try InstanceCodec.decodeInstance(doc, file: "inst/instance.yaml")
            return nil
        } catch {
            return DiagnosticRenderer().render(error)
        }
    }

    @Test func eachMistakeNamesTheFileOnce() throws {
        #expect(try rendered(Self.good) == nil)
        let cases: [(String, String)] = [
            (Self.good.replacingOccurrences(of: "id: i1\n", with: ""), "it has no `id`"),
            (Self.good.replacingOccurrences(of: "2026-11-22T10:00:00Z", with: "soon"),
             "`createdAt` must be an ISO 8601 date such as 2026-11-22T10:00:00Z"),
            (Self.good.replacingOccurrences(of: "schemaVersion: 1\n", with: ""), "it has no `schemaVersion`"),
            (Self.good + "archived: maybe\n", "`archived` must be true or false"),
            (Self.good + "polling: often\n", "`polling` must be active or paused"),
        ]
        for (text, message) in cases {
            #expect(try rendered(text) == "inst/instance.yaml: error[malformedFile]: \(message)")
        }
    }
}
