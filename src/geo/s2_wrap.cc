/*
 * s2_wrap.cc -- the only C++ of Tamga: S2 behind the C interface of
 * s2_wrap.h.  Geometries hold S2 objects (points, S2Polyline, S2Polygon,
 * an S2Cap); predicates follow mongod's GeometryContainer (within: every
 * part in the region; intersects: S2's boolean operations over shape
 * indexes), coverings use S2RegionCoverer as mongod's key generator and
 * planner do.  Nothing here throws across the C boundary: S2 validation
 * is run with S2Debug::DISABLE and reported as a status.
 */
#include "geo/s2_wrap.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <s2/mutable_s2shape_index.h>
#include <s2/s1angle.h>
#include <s2/s2boolean_operation.h>
#include <s2/s2cap.h>
#include <s2/s2cell.h>
#include <s2/s2cell_id.h>
#include <s2/s2error.h>
#include <s2/s2latlng.h>
#include <s2/s2loop.h>
#include <s2/s2metrics.h>
#include <s2/s2point_vector_shape.h>
#include <s2/s2polygon.h>
#include <s2/s2polyline.h>
#include <s2/s2region_coverer.h>
#include <s2/s2region_intersection.h>
#include <s2/s2region_union.h>

struct s2w_geom {
	std::vector<S2Point> points;
	std::vector<std::unique_ptr<S2Polyline>> lines;
	std::vector<std::unique_ptr<S2Polygon>> polys;
	bool has_cap = false;
	S2Cap cap;
	/* built on first use by the boolean predicates (once, thread-safe) */
	mutable std::once_flag index_once;
	mutable std::unique_ptr<MutableS2ShapeIndex> index;
};

static S2Point
to_point(const double p[3])
{
	return S2Point(p[0], p[1], p[2]);
}

static void
copy_reason(const S2Error &e, char *reason, size_t len)
{
	if (reason == nullptr || len == 0)
		return;
	std::string s = e.text();
	std::snprintf(reason, len, "%s", s.c_str());
}

static const MutableS2ShapeIndex &
geom_index(const s2w_geom_t *g)
{
	std::call_once(g->index_once, [g]() {
		auto ix = std::make_unique<MutableS2ShapeIndex>();
		if (!g->points.empty())
			ix->Add(std::make_unique<S2PointVectorShape>(g->points));
		for (const auto &l : g->lines)
			ix->Add(std::make_unique<S2Polyline::Shape>(l.get()));
		for (const auto &p : g->polys)
			ix->Add(std::make_unique<S2Polygon::Shape>(p.get()));
		ix->ForceBuild();
		g->index = std::move(ix);
	});
	return *g->index;
}

extern "C" {

void
s2w_point_from_lnglat(double lng, double lat, double out[3])
{
	S2Point p = S2LatLng::FromDegrees(lat, lng).Normalized().ToPoint();

	out[0] = p.x();
	out[1] = p.y();
	out[2] = p.z();
}

double
s2w_angle(const double a[3], const double b[3])
{
	return S1Angle(to_point(a), to_point(b)).radians();
}

uint64_t
s2w_cell_from_point(const double p[3], int level)
{
	S2CellId id(to_point(p));

	return level >= S2CellId::kMaxLevel ? id.id() : id.parent(level).id();
}

void
s2w_cell_range(uint64_t id, uint64_t *lo, uint64_t *hi)
{
	S2CellId c(id);

	*lo = c.range_min().id();
	*hi = c.range_max().id();
}

uint64_t
s2w_cell_parent(uint64_t id, int level)
{
	return S2CellId(id).parent(level).id();
}

int
s2w_cell_level(uint64_t id)
{
	return S2CellId(id).level();
}

int
s2w_avg_edge_closest_level(double radians)
{
	return S2::kAvgEdge.GetClosestLevel(radians);
}

s2w_geom_t *
s2w_geom_new(void)
{
	return new (std::nothrow) s2w_geom();
}

void
s2w_geom_free(s2w_geom_t *g)
{
	delete g;
}

void
s2w_geom_add_point(s2w_geom_t *g, const double p[3])
{
	g->points.push_back(to_point(p));
}

s2w_status_t
s2w_geom_add_polyline(s2w_geom_t *g, const double (*v)[3], size_t n, bool skip_validation,
                      char *reason, size_t reason_len)
{
	std::vector<S2Point> pts;
	S2Error e;

	pts.reserve(n);
	for (size_t i = 0; i < n; i++)
		pts.push_back(to_point(v[i]));
	auto line = std::make_unique<S2Polyline>(pts, S2Debug::DISABLE);
	if (!skip_validation && line->FindValidationError(&e)) {
		copy_reason(e, reason, reason_len);
		return S2W_LINE_INVALID;
	}
	g->lines.push_back(std::move(line));
	return S2W_OK;
}

s2w_status_t
s2w_geom_add_polygon(s2w_geom_t *g, size_t nloops, const size_t *lens, const double (*v)[3],
                     bool skip_validation, int *which, char *reason, size_t reason_len)
{
	std::vector<std::unique_ptr<S2Loop>> loops;
	size_t off = 0;
	S2Error e;

	for (size_t i = 0; i < nloops; i++) {
		std::vector<S2Point> pts;

		*which = (int)i;
		for (size_t k = 0; k < lens[i]; k++)
			pts.push_back(to_point(v[off + k]));
		off += lens[i];
		auto loop = std::make_unique<S2Loop>(pts, S2Debug::DISABLE);
		if (!skip_validation && loop->FindValidationError(&e)) {
			copy_reason(e, reason, reason_len);
			return S2W_LOOP_INVALID;
		}
		/* more than a hemisphere: the other side is meant */
		loop->Normalize();
		if (!loops.empty() && !loops[0]->Contains(*loop)) {
			loops.push_back(std::move(loop));
			return S2W_LOOP_NOT_HOLE;
		}
		loops.push_back(std::move(loop));
	}
	auto poly = std::make_unique<S2Polygon>();
	poly->set_s2debug_override(S2Debug::DISABLE);
	poly->InitNested(std::move(loops));
	if (skip_validation) {
		g->polys.push_back(std::move(poly));
		return S2W_OK;
	}
	if (poly->FindValidationError(&e)) {
		copy_reason(e, reason, reason_len);
		return S2W_POLYGON_INVALID;
	}
	if (!poly->IsNormalized()) {
		if (reason != nullptr && reason_len > 0)
			std::snprintf(reason, reason_len,
			              "Loop 1 shares more than one vertex with its parent loop 0");
		return S2W_POLYGON_NOT_NORMALIZED;
	}
	if (poly->num_loops() > 0 && poly->GetLastDescendant(0) < poly->num_loops() - 1)
		return S2W_POLYGON_MANY_SHELLS;
	for (int i = 0; i < poly->num_loops(); i++)
		if (poly->loop(i)->depth() > 1)
			return S2W_POLYGON_NESTED;
	g->polys.push_back(std::move(poly));
	return S2W_OK;
}

void
s2w_geom_set_cap(s2w_geom_t *g, const double center[3], double radians)
{
	g->has_cap = true;
	g->cap = S2Cap(to_point(center), S1Angle::Radians(radians));
}

static bool
cap_contains_part_vertices(const S2Cap &cap, const s2w_geom_t *g)
{
	for (const auto &p : g->points)
		if (!cap.Contains(p))
			return false;
	for (const auto &l : g->lines)
		for (int i = 0; i < l->num_vertices(); i++)
			if (!cap.Contains(l->vertex(i)))
				return false;
	for (const auto &poly : g->polys)
		for (int k = 0; k < poly->num_loops(); k++) {
			const S2Loop *lp = poly->loop(k);
			for (int i = 0; i < lp->num_vertices(); i++)
				if (!cap.Contains(lp->vertex(i)))
					return false;
		}
	return true;
}

bool
s2w_within(const s2w_geom_t *region, const s2w_geom_t *g)
{
	if (g->points.empty() && g->lines.empty() && g->polys.empty())
		return false;
	if (region->has_cap)
		return cap_contains_part_vertices(region->cap, g);
	for (const auto &p : g->points) {
		bool in = false;
		for (const auto &r : region->polys)
			if (r->Contains(p)) {
				in = true;
				break;
			}
		if (!in)
			return false;
	}
	for (const auto &l : g->lines) {
		bool in = false;
		for (const auto &r : region->polys)
			if (r->Contains(*l)) {
				in = true;
				break;
			}
		if (!in)
			return false;
	}
	for (const auto &poly : g->polys) {
		bool in = false;
		for (const auto &r : region->polys)
			if (r->Contains(*poly)) {
				in = true;
				break;
			}
		if (!in)
			return false;
	}
	return true;
}

bool
s2w_within_point(const s2w_geom_t *region, const double p[3])
{
	S2Point q = to_point(p);

	if (region->has_cap)
		return region->cap.Contains(q);
	for (const auto &r : region->polys)
		if (r->Contains(q))
			return true;
	return false;
}

bool
s2w_intersects_point(const s2w_geom_t *a, const double p[3])
{
	s2w_geom_t pt;

	pt.points.push_back(to_point(p));
	return s2w_intersects(a, &pt);
}

static double
parts_distance(const s2w_geom_t *g, const S2Point &p)
{
	double best = INFINITY;

	for (const auto &q : g->points)
		best = std::fmin(best, S1Angle(p, q).radians());
	for (const auto &l : g->lines) {
		int next = 0;
		best = std::fmin(best, S1Angle(p, l->Project(p, &next)).radians());
	}
	for (const auto &poly : g->polys) {
		if (poly->Contains(p))
			return 0;
		best = std::fmin(best, S1Angle(p, poly->Project(p)).radians());
	}
	return best;
}

double
s2w_distance(const s2w_geom_t *g, const double p[3])
{
	return parts_distance(g, to_point(p));
}

bool
s2w_intersects(const s2w_geom_t *a, const s2w_geom_t *b)
{
	if (a->has_cap && b->has_cap)
		return S1Angle(a->cap.center(), b->cap.center()).radians() <=
		       a->cap.GetRadius().radians() + b->cap.GetRadius().radians();
	if (a->has_cap || b->has_cap) {
		const s2w_geom_t *cap = a->has_cap ? a : b, *other = a->has_cap ? b : a;
		return parts_distance(other, cap->cap.center()) <= cap->cap.GetRadius().radians();
	}
	return S2BooleanOperation::Intersects(geom_index(a), geom_index(b));
}

static int
cover_region(const S2Region &r, int min_level, int max_level, int max_cells, uint64_t **out,
             size_t *n)
{
	S2RegionCoverer::Options opt;
	std::vector<S2CellId> cells;

	opt.set_min_level(min_level);
	opt.set_max_level(max_level);
	opt.set_max_cells(max_cells);
	S2RegionCoverer coverer(opt);
	coverer.GetCovering(r, &cells);
	*out = (uint64_t *)std::malloc(sizeof(uint64_t) * (cells.empty() ? 1 : cells.size()));
	if (*out == nullptr)
		return -1;
	for (size_t i = 0; i < cells.size(); i++)
		(*out)[i] = cells[i].id();
	*n = cells.size();
	return 0;
}

int
s2w_cover(const s2w_geom_t *g, int min_level, int max_level, int max_cells, uint64_t **out,
          size_t *n)
{
	std::vector<std::unique_ptr<S2Region>> regions;

	if (g->has_cap)
		return cover_region(g->cap, min_level, max_level, max_cells, out, n);
	for (const auto &p : g->points)
		regions.push_back(std::make_unique<S2Cell>(S2CellId(p)));
	for (const auto &l : g->lines)
		regions.push_back(std::unique_ptr<S2Region>(l->Clone()));
	for (const auto &poly : g->polys)
		regions.push_back(std::unique_ptr<S2Region>(poly->Clone()));
	if (regions.size() == 1)
		return cover_region(*regions[0], min_level, max_level, max_cells, out, n);
	S2RegionUnion u(std::move(regions));
	return cover_region(u, min_level, max_level, max_cells, out, n);
}

int
s2w_cover_annulus(const double center[3], double inner, double outer, int min_level,
                  int max_level, int max_cells, uint64_t **out, size_t *n)
{
	S2Point c = to_point(center);
	S2Cap outer_cap(c, S1Angle::Radians(outer));

	if (inner <= 0)
		return cover_region(outer_cap, min_level, max_level, max_cells, out, n);
	std::vector<std::unique_ptr<S2Region>> rs;
	rs.push_back(std::make_unique<S2Cap>(outer_cap));
	rs.push_back(std::make_unique<S2Cap>(S2Cap(c, S1Angle::Radians(inner)).Complement()));
	S2RegionIntersection ring(std::move(rs));
	return cover_region(ring, min_level, max_level, max_cells, out, n);
}

bool
s2w_geom_is_point(const s2w_geom_t *g)
{
	return !g->has_cap && g->points.size() == 1 && g->lines.empty() && g->polys.empty();
}

size_t
s2w_geom_parts(const s2w_geom_t *g)
{
	return g->points.size() + g->lines.size() + g->polys.size();
}

} /* extern "C" */
