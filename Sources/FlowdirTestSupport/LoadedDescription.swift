import FlowdirCore
import FlowdirTemplates

extension LoadedTemplate {
    /// Everything a load gave, as text, every stored field included
    /// (`dump`), dictionaries in key order: two loads are the same when
    /// these are equal. For the workflow cache's tests.
    public var fullDescription: String {
        var out = "file \(file) valid \(isValid)\n"
        dump(template, to: &out)
        dump(diagnostics, to: &out)
        dump(sources.sorted { $0.key < $1.key }, to: &out)
        dump(toolFiles, to: &out)
        guard let graph else { return out + "no graph\n" }
        dump(graph.template, to: &out)
        dump(graph.nodes, to: &out)
        out += "order \(graph.order)\n"
        for id in graph.order {
            out += "\(id) at \(graph.index(of: id) ?? -1), place \(graph.position(of: id) ?? -1), "
                + "class \(graph.resourceClass(of: id).map(\.rawValue) ?? "-"), interactive \(graph.isInteractive(id)), "
                + "consumers \(graph.consumers(of: id)), descendants \(graph.descendants(of: id))\n"
            dump((graph.incoming[id] ?? [:]).sorted { $0.key < $1.key }, to: &out)
            dump(graph.outgoing[id] ?? [], to: &out)
        }
        return out
    }
}
