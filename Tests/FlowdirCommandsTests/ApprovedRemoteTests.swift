import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// issue #41, end to end: a `run.http` node that asks to confirm its params
/// is sent to a real job server after `flowdir answer --approve`, with the
/// edited params, and succeeds with the job's output — never on the
/// approval alone.
@Suite(.tags(.large), Tier.notQuick) struct ApprovedRemoteTests {
    @Test func anApprovedJobRunsOnTheJobServerWithTheEditedParams() async throws {
        try await offPool {
            let s = try RemoteJobSetup(nodes: "  - { id: r, kind: Remote, params: { text: offered }, await: { type: confirm_params } }\n")
            // Both sides hold the token explicitly: the server by its file, the client by the environment.
            let token = ["FLOWDIR_TOKEN_GPU": RemoteJobSetup.token]
            let inst = try s.new()
            let asked = try s.flowdir(["run", inst], environment: token)
            #expect(asked.status == 2, "\(asked.stderr)")
            #expect(s.state(inst, "r") == "awaitingUser")
            #expect(s.predictions().isEmpty)
            let answered = try s.flowdir(["answer", inst + "/r", "--approve", "--set", "text=approved"], environment: token)
            #expect(answered.status == 0, "\(answered.stderr)")
            let done = try s.flowdir(["run", inst], environment: token)
            #expect(done.status == 0, "\(done.stdout)\(done.stderr)")
            #expect(s.state(inst, "r") == "succeeded")
            // One prediction, made with the approved text; its output is the node's.
            let predictions = s.predictions()
            #expect(predictions.count == 1)
            #expect((predictions.first?["input"] as? [String: Any])?["text"] as? String == "approved")
            #expect(try String(contentsOfFile: inst + "/nodes/r/out/out.txt", encoding: .utf8) == "approved")
            let record = try String(contentsOfFile: inst + "/nodes/r/runs/1/run.yaml", encoding: .utf8)
            #expect(record.contains("trigger: answer") && record.contains("job: "), "\(record)\n\(s.stateFile(inst, "r"))")
        }
    }
}
