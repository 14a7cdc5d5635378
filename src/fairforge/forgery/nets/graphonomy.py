"""Graphonomy (Gong et al., CVPR 2019), the human parser the bi-layer release uses to cut the
source person from the background (``external/Graphonomy`` in saic-violet/bilayer-model).

The network is Graphonomy's ``deeplab_xception_transfer_projection_savemem`` with the
bi-layer release's arguments (20 CIHP classes, 7 PASCAL-Person-Part source classes, 128
hidden graph features): a DeepLab v3+ with the modified aligned Xception-65 backbone
(output stride 16), its decoder at a quarter of the input size, then graph reasoning over the
20 target and 7 source part nodes (feature maps projected onto nodes, graph convolutions with
the normalised CIHP and PASCAL adjacency, source nodes carried to the target nodes by a
learned transfer and by feature similarity, then projected back onto the maps) and a 1x1
classifier. Module names are Graphonomy's, so its checkpoint loads after the renaming its
``load_source_model`` applies (:func:`release_key`).

Graphonomy's Xception blocks start with an in-place ReLU shared with the rest of the block,
which rectifies the block's input before the skip connection reads it; the skips here read
the rectified input for the same result. Its third source graph layer reuses the second
layer's weights (``source_graph_conv2``); ``source_graph_conv3`` is loaded and unused, as in
the release.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CIHP_CLASSES = 20
PASCAL_CLASSES = 7
HIDDEN = 128

# Graphonomy's graph.py: neighbours of each part node (CIHP 20 classes, PASCAL 7 classes)
PASCAL_GRAPH = {
    0: [0],
    1: [1, 2],
    2: [1, 2, 3, 5],
    3: [2, 3, 4],
    4: [3, 4],
    5: [2, 5, 6],
    6: [5, 6],
}
CIHP_GRAPH = {
    0: [],
    1: [2, 13],
    2: [1, 13],
    3: [14, 15],
    4: [13],
    5: [6, 7, 9, 10, 11, 12, 14, 15],
    6: [5, 7, 10, 11, 14, 15, 16, 17],
    7: [5, 6, 9, 10, 11, 12, 14, 15],
    8: [16, 17, 18, 19],
    9: [5, 7, 10, 16, 17, 18, 19],
    10: [5, 6, 7, 9, 11, 12, 13, 14, 15, 16, 17],
    11: [5, 6, 7, 10, 13],
    12: [5, 7, 10, 16, 17],
    13: [1, 2, 4, 10, 11],
    14: [3, 5, 6, 7, 10],
    15: [3, 5, 6, 7, 10],
    16: [6, 8, 9, 10, 12, 18],
    17: [6, 8, 9, 10, 12, 19],
    18: [8, 9, 16],
    19: [8, 9, 17],
}
# graph.py's cihp2pascal_nlp_adj: word-embedding similarity of the 7 PASCAL and 20 CIHP classes
CIHP2PASCAL_NLP = (
    (1.0, 0.35333052, 0.32727194, 0.17418084, 0.18757584, 0.40608522, 0.37503981,
     0.35448462, 0.22598555, 0.23893579, 0.33064262, 0.28923404, 0.27986573, 0.4211553,
     0.36915778, 0.41377746, 0.32485771, 0.37248222, 0.36865639, 0.41500332),
    (0.39615879, 0.46201529, 0.52321467, 0.30826114, 0.25669527, 0.54747773, 0.3670523,
     0.3901983, 0.27519473, 0.3433325, 0.52728509, 0.32771333, 0.34819325, 0.63882953,
     0.68042925, 0.69368576, 0.63395791, 0.65344337, 0.59538781, 0.6071375),
    (0.16373166, 0.21663339, 0.3053872, 0.28377612, 0.1372435, 0.4448808, 0.29479995,
     0.31092595, 0.22703953, 0.33983576, 0.75778818, 0.2619818, 0.37069392, 0.35184867,
     0.49877512, 0.49979437, 0.51853277, 0.52517541, 0.32517741, 0.32377309),
    (0.32687232, 0.38482461, 0.37693463, 0.41610834, 0.20415749, 0.76749079, 0.35139853,
     0.3787411, 0.28411737, 0.35155421, 0.58792618, 0.31141718, 0.40585111, 0.51189218,
     0.82042737, 0.8342413, 0.70732188, 0.72752501, 0.60327325, 0.61431337),
    (0.34069369, 0.34817292, 0.37525998, 0.36497069, 0.17841617, 0.69746208, 0.31731463,
     0.34628951, 0.25167277, 0.32072379, 0.56711286, 0.24894776, 0.37000453, 0.52600859,
     0.82483993, 0.84966274, 0.7033991, 0.73449378, 0.56649608, 0.58888791),
    (0.28477487, 0.35139564, 0.42742352, 0.41664321, 0.20004676, 0.78566833, 0.42237487,
     0.41048549, 0.37933812, 0.46542516, 0.62444759, 0.3274493, 0.49466009, 0.49314658,
     0.71244233, 0.71497003, 0.8234787, 0.83566589, 0.62597135, 0.62626812),
    (0.3011378, 0.31775977, 0.42922647, 0.36896257, 0.17597556, 0.72214655, 0.39162804,
     0.38137872, 0.34980296, 0.43818419, 0.60879174, 0.26762545, 0.46271161, 0.51150476,
     0.72318109, 0.73678399, 0.82620388, 0.84942166, 0.5943811, 0.60607602),
)  # fmt: skip


def normalized_adjacency(graph: dict) -> np.ndarray:
    """D^-1/2 (A + I) D^-1/2 of the undirected graph (a listed self-loop counts once in A),
    as Graphonomy's ``preprocess_adj`` computes it with networkx and scipy."""
    n = len(graph)
    adj = np.zeros((n, n))
    for i, neighbours in graph.items():
        for j in neighbours:
            adj[i, j] = adj[j, i] = 1.0
    adj += np.eye(n)
    d = adj.sum(1) ** -0.5
    d[np.isinf(d)] = 0.0
    return (adj * d[None, :]).T * d[None, :]


def release_key(name: str) -> str:
    """Graphonomy's ``load_source_model`` renaming of a checkpoint key to the model's."""
    name = name.replace("module.", "")
    if (
        "graph" in name
        and "source" not in name
        and "target" not in name
        and "fc_" not in name
        and "transpose_graph" not in name
    ):
        if "featuremap_2_graph" in name:
            return name.replace("featuremap_2_graph", "source_featuremap_2_graph")
        return name.replace("graph", "source_graph")
    return name


# --------------------------------------------------------------------------- backbone


def fixed_padding(x: torch.Tensor, kernel_size: int, rate: int) -> torch.Tensor:
    total = kernel_size + (kernel_size - 1) * (rate - 1) - 1
    return F.pad(x, (total // 2, total - total // 2, total // 2, total - total // 2))


class SeparableConv2dSame(nn.Module):
    """Depthwise 3x3 ("same" padding) + BN, pointwise 1x1 + BN, no activation."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1, dilation: int = 1):
        super().__init__()
        self.depthwise = nn.Conv2d(
            inplanes, inplanes, 3, stride, 0, dilation, groups=inplanes, bias=False
        )
        self.depthwise_bn = nn.BatchNorm2d(inplanes)
        self.pointwise = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.pointwise_bn = nn.BatchNorm2d(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = fixed_padding(x, 3, self.depthwise.dilation[0])
        return self.pointwise_bn(self.pointwise(self.depthwise_bn(self.depthwise(x))))


class SeparableConv2dASPP(nn.Module):
    """Depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN + ReLU."""

    def __init__(self, inplanes: int, planes: int, dilation: int = 1, padding: int = 1):
        super().__init__()
        self.depthwise = nn.Conv2d(
            inplanes, inplanes, 3, 1, padding, dilation, groups=inplanes, bias=False
        )
        self.depthwise_bn = nn.BatchNorm2d(inplanes)
        self.pointwise = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.pointwise_bn = nn.BatchNorm2d(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.depthwise_bn(self.depthwise(x)))
        return F.relu(self.pointwise_bn(self.pointwise(x)))


class AtrousModule(nn.Module):
    """ASPP branch / decoder module: a separable atrous convolution."""

    def __init__(self, inplanes: int, planes: int, rate: int):
        super().__init__()
        self.atrous_convolution = SeparableConv2dASPP(inplanes, planes, rate, rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.atrous_convolution(x)


class PointwiseASPP(nn.Module):
    """ASPP's rate-1 branch: 1x1 convolution + BN + ReLU."""

    def __init__(self, inplanes: int, planes: int):
        super().__init__()
        self.atrous_convolution = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn = nn.BatchNorm2d(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.atrous_convolution(x)))


def _rep(inplanes, planes, reps, stride, dilation, start_with_relu, grow_first, is_last, split):
    """The block's layer list at Graphonomy's indices (ReLUs included); with ``split`` the
    strided last convolution is returned apart (Block2's ``block2_lastconv``)."""
    layers: list[nn.Module] = []
    filters = inplanes
    if grow_first:
        layers += [nn.ReLU(), SeparableConv2dSame(inplanes, planes, 1, dilation)]
        filters = planes
    for _ in range(reps - 1):
        layers += [nn.ReLU(), SeparableConv2dSame(filters, filters, 1, dilation)]
    if not grow_first:
        layers += [nn.ReLU(), SeparableConv2dSame(inplanes, planes, 1, dilation)]
    if not start_with_relu:
        layers = layers[1:]
    last = [nn.ReLU(), SeparableConv2dSame(planes, planes, 2, dilation)] if stride != 1 else []
    if not split:
        layers += last
    if is_last:
        layers += [nn.ReLU(), SeparableConv2dSame(planes, planes, 1, dilation)]
    return nn.Sequential(*layers), nn.Sequential(*last)


class Block(nn.Module):
    def __init__(
        self,
        inplanes,
        planes,
        reps,
        stride=1,
        dilation=1,
        start_with_relu=True,
        grow_first=True,
        is_last=False,
    ):
        super().__init__()
        if planes != inplanes or stride != 1:
            self.skip = nn.Conv2d(inplanes, planes, 1, stride=1 if is_last else 2, bias=False)
            self.skipbn = nn.BatchNorm2d(planes)
        else:
            self.skip = None
        self.start_with_relu = start_with_relu
        self.rep, _ = _rep(
            inplanes, planes, reps, stride, dilation, start_with_relu, grow_first, is_last, False
        )

    def forward(self, inp: torch.Tensor) -> torch.Tensor:
        if self.start_with_relu:
            inp = F.relu(inp)
            x = self.rep[1:](inp)
        else:
            x = self.rep(inp)
        return x + (self.skipbn(self.skip(inp)) if self.skip is not None else inp)


class Block2(nn.Module):
    """Xception's second entry block, which also returns its features before the strided
    convolution (the decoder's low-level features)."""

    def __init__(self, inplanes, planes, reps, stride):
        super().__init__()
        self.skip = nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False)
        self.skipbn = nn.BatchNorm2d(planes)
        self.rep, self.block2_lastconv = _rep(
            inplanes, planes, reps, stride, 1, True, True, False, True
        )

    def forward(self, inp: torch.Tensor):
        inp = F.relu(inp)
        x = self.rep[1:](inp)
        low_middle = x
        x = self.block2_lastconv(x) + self.skipbn(self.skip(inp))
        return x, low_middle


class Xception(nn.Module):
    """The modified aligned Xception-65 at output stride 16."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.block1 = Block(64, 128, reps=2, stride=2, start_with_relu=False)
        self.block2 = Block2(128, 256, reps=2, stride=2)
        self.block3 = Block(256, 728, reps=2, stride=2)
        for i in range(4, 20):
            setattr(self, f"block{i}", Block(728, 728, reps=3))
        self.block20 = Block(728, 1024, reps=2, grow_first=False, is_last=True)
        self.conv3 = SeparableConv2dASPP(1024, 1536, dilation=2, padding=2)
        self.conv4 = SeparableConv2dASPP(1536, 1536, dilation=2, padding=2)
        self.conv5 = SeparableConv2dASPP(1536, 2048, dilation=2, padding=2)

    def forward(self, x: torch.Tensor):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.block1(x)
        x, low_level = self.block2(x)
        for i in range(3, 21):
            x = getattr(self, f"block{i}")(x)
        x = self.conv5(self.conv4(self.conv3(x)))
        return x, low_level


# --------------------------------------------------------------------------- graph layers


class GraphConvolution(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))

    def forward(self, x, adj=None, relu=False):
        out = torch.matmul(x, self.weight)
        if adj is not None:
            out = torch.matmul(adj, out)
        return F.relu(out) if relu else out


class FeaturemapsToGraph(nn.Module):
    def __init__(self, input_channels: int, hidden: int, nodes: int):
        super().__init__()
        self.pre_fea = nn.Parameter(torch.empty(input_channels, nodes))
        self.weight = nn.Parameter(torch.empty(input_channels, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        flat = x.view(n, c, h * w).transpose(1, 2)
        assignment = F.softmax(torch.matmul(flat, self.pre_fea), dim=-1)
        return F.relu(torch.matmul(assignment.transpose(1, 2), torch.matmul(flat, self.weight)))


class GraphToFeaturemaps(nn.Module):
    """Graphonomy's ``Graph_to_Featuremaps_savemem``: node features back onto the maps, each
    pixel attending over the nodes."""

    def __init__(self, input_channels: int, output_channels: int, hidden: int):
        super().__init__()
        self.node_fea_for_res = nn.Parameter(torch.empty(input_channels, 1))
        self.node_fea_for_hidden = nn.Parameter(torch.empty(hidden, 1))
        self.weight = nn.Parameter(torch.empty(hidden, output_channels))

    def forward(self, graph: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
        b, c, h, w = res.shape
        graph = graph.reshape(1, b, *graph.shape[-2:])  # 1 x batch x nodes x hidden
        nodes, hidden = graph.shape[-2:]
        # per pixel and node: a score from the pixel's features plus one from the node's
        # (the same broadcast products as Graphonomy's, so the sums round alike)
        pixels = res.view(b, c, h * w).transpose(1, 2).unsqueeze(2).expand(b, h * w, nodes, c)
        node = graph.transpose(0, 1).expand(b, h * w, nodes, hidden)
        logits = torch.matmul(pixels, self.node_fea_for_res) + torch.matmul(
            node, self.node_fea_for_hidden
        )
        weights = F.softmax(logits.view(b, h * w, nodes), dim=-1)
        out = torch.matmul(weights, torch.matmul(graph, self.weight))  # 1 x batch x hw x out
        return F.relu(out.transpose(2, 3).contiguous().view(res.shape))


class GraphTransfer(nn.Module):
    """Graphonomy's ``Graph_trans``: source nodes onto target nodes through the row-softmax of
    the rectified transfer adjacency (given at run time; its own ``adj`` is loaded, unused)."""

    def __init__(self, features: int, begin_nodes: int, end_nodes: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(features, features))
        self.adj = nn.Parameter(torch.empty(end_nodes, begin_nodes))

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return F.relu(torch.matmul(F.softmax(F.relu(adj), dim=-1), torch.matmul(x, self.weight)))


def similarity_transfer(source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    sim = torch.matmul(F.normalize(target, dim=-1), F.normalize(source, dim=-1).transpose(-1, -2))
    return torch.matmul(F.softmax(sim, dim=-1), source)


# --------------------------------------------------------------------------- the parser


class Graphonomy(nn.Module):
    """(1, 3, H, W) BGR image -> (1, 20, H, W) CIHP class logits. One image at a time, as the
    bi-layer release runs it."""

    def __init__(self):
        super().__init__()
        self.xception_features = Xception()
        self.aspp1 = PointwiseASPP(2048, 256)
        self.aspp2 = AtrousModule(2048, 256, 6)
        self.aspp3 = AtrousModule(2048, 256, 12)
        self.aspp4 = AtrousModule(2048, 256, 18)
        self.global_avg_pool = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Conv2d(2048, 256, 1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
        )
        self.concat_projection_conv1 = nn.Conv2d(1280, 256, 1, bias=False)
        self.concat_projection_bn1 = nn.BatchNorm2d(256)
        self.feature_projection_conv1 = nn.Conv2d(256, 48, 1, bias=False)
        self.feature_projection_bn1 = nn.BatchNorm2d(48)
        self.decoder = nn.Sequential(AtrousModule(304, 256, 1), AtrousModule(256, 256, 1))
        self.semantic = nn.Conv2d(256, CIHP_CLASSES, 1)
        self.target_featuremap_2_graph = FeaturemapsToGraph(256, HIDDEN, CIHP_CLASSES)
        for i in (1, 2, 3):
            setattr(self, f"target_graph_conv{i}", GraphConvolution(HIDDEN, HIDDEN))
        self.target_graph_2_fea = GraphToFeaturemaps(256, 256, HIDDEN)
        self.target_skip_conv = nn.Sequential(nn.Conv2d(256, 256, 1), nn.ReLU(True))
        self.source_featuremap_2_graph = FeaturemapsToGraph(256, HIDDEN, PASCAL_CLASSES)
        for i in (1, 2, 3):
            setattr(self, f"source_graph_conv{i}", GraphConvolution(HIDDEN, HIDDEN))
        self.transpose_graph = GraphTransfer(HIDDEN, PASCAL_CLASSES, CIHP_CLASSES)
        self.fc_graph = GraphConvolution(HIDDEN * 3, HIDDEN)
        # constants, kept out of the state dict (and of meta-device construction)
        self.adjacency = {
            "target": normalized_adjacency(CIHP_GRAPH),
            "source": normalized_adjacency(PASCAL_GRAPH),
            "transfer": np.asarray(CIHP2PASCAL_NLP).T,
        }

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        feats, low = self.xception_features(x)
        pooled = self.global_avg_pool(feats)
        branches = [self.aspp1(feats), self.aspp2(feats), self.aspp3(feats), self.aspp4(feats)]
        pooled = F.interpolate(pooled, branches[-1].shape[2:], mode="bilinear", align_corners=True)
        y = torch.cat(branches + [pooled], 1)
        y = F.relu(self.concat_projection_bn1(self.concat_projection_conv1(y)))
        y = F.interpolate(y, low.shape[2:], mode="bilinear", align_corners=True)
        low = F.relu(self.feature_projection_bn1(self.feature_projection_conv1(low)))
        y = self.decoder(torch.cat([y, low], 1))

        adj = {k: torch.from_numpy(v).float().to(y.device) for k, v in self.adjacency.items()}
        source = self.source_featuremap_2_graph(y)
        sources = [self.source_graph_conv1(source, adj["source"], relu=True)]
        sources.append(self.source_graph_conv2(sources[0], adj["source"], relu=True))
        sources.append(self.source_graph_conv2(sources[1], adj["source"], relu=True))
        graph = self.target_featuremap_2_graph(y)
        for i, src in enumerate(sources, 1):
            moved = self.transpose_graph(src, adj["transfer"])
            graph = torch.cat([graph, similarity_transfer(src, graph), moved], dim=-1)
            graph = self.fc_graph(graph, relu=True)
            graph = getattr(self, f"target_graph_conv{i}")(graph, adj["target"], relu=True)
        y = self.target_skip_conv(y) + self.target_graph_2_fea(graph, y)
        return F.interpolate(self.semantic(y), size, mode="bilinear", align_corners=True)
