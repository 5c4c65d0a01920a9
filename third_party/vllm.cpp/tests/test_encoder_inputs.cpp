// Images on the serving core's road (issue 46), with fake requests and no
// model: the scheduler's encoder budget (a chunk stops before an image it
// cannot pay for; an image dearer than the whole budget runs alone; an
// image with rows costs nothing), the prefix cache's block hashes over
// image content (two images behind the same placeholder tokens never share
// a block, the same image does), the encoder cache's LRU, RGB image checks,
// and the prompt's image markers and placeholder runs.
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "core/block_hash_chain.h"
#include "core/kv_cache_manager.h"
#include "core/scheduler.h"
#include "engine/encoder_cache.h"
#include "engine/image_prompt.h"
#include "fake_requests.h"
#include "util/error.h"
#include "vision/image.h"

using namespace vllm;
using namespace vllm_test;

namespace {

constexpr int kBlockSize = 4;
constexpr int32_t kPlaceholder = 99;

KVCacheManager make_kv(int num_blocks, bool prefix_caching = false) {
    return KVCacheManager(group_layers_by_window({0}), {num_blocks}, kBlockSize, prefix_caching);
}

// `before` text tokens, `length` placeholders, `after` text tokens.
std::vector<int32_t> prompt_with_image(int before, int length, int after) {
    std::vector<int32_t> t = token_ids(before);
    t.insert(t.end(), length, kPlaceholder);
    for (int32_t id : token_ids(after, 50)) t.push_back(id);
    return t;
}

void test_encoder_budget_cuts_chunks() {
    KVCacheManager kv = make_kv(64);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 64, kv);
    scheduler.set_encoder_budget(10);
    // a: an image of cost 8 at [2, 10); b: an image of cost 8 at [4, 12).
    auto a = fake_request(prompt_with_image(2, 8, 2), 0), b = fake_request(prompt_with_image(4, 8, 2), 1);
    a->encoder_inputs = {EncoderSpan{2, 8, 8, 111}};
    b->encoder_inputs = {EncoderSpan{4, 8, 8, 222}};
    scheduler.add(a.get());
    scheduler.add(b.get());
    SchedulerOutput batch = scheduler.schedule();
    check(batch.size() == 2 && batch[0].num_new_tokens == 12 && batch[1].num_new_tokens == 4,
          "a takes its image (8 of 10); b stops before its image (the 2 left cannot pay for it)");
    a->encoder_inputs[0].has_rows = true;  // the engine encoded it
    complete_step(scheduler, batch);
    batch = scheduler.schedule();
    check(batch.size() == 2 && batch[1].request == b.get() && batch[1].num_new_tokens == 10,
          "next step b reaches its image (a's has rows and costs nothing)");

    // An image dearer than the whole budget runs in a step that spent none of it.
    KVCacheManager kv2 = make_kv(64);
    Scheduler alone(SchedulingPolicy::FCFS, 8, 64, kv2);
    alone.set_encoder_budget(4);
    auto c = fake_request(prompt_with_image(1, 8, 1), 2), d = fake_request(prompt_with_image(1, 8, 1), 3);
    c->encoder_inputs = {EncoderSpan{1, 8, 8, 333}};
    d->encoder_inputs = {EncoderSpan{1, 8, 8, 444}};
    alone.add(c.get());
    alone.add(d.get());
    batch = alone.schedule();
    check(batch.size() == 2 && batch[0].num_new_tokens == 10 && batch[1].num_new_tokens == 1,
          "c's oversized image runs in the untouched budget; d stops before its own");
}

void test_block_hashes_carry_images() {
    const std::vector<int32_t> tokens = prompt_with_image(2, 8, 6);  // 16 tokens: 4 blocks
    const std::vector<EncoderSpan> cat = {EncoderSpan{2, 8, 8, 0xCA7}}, dog = {EncoderSpan{2, 8, 8, 0xD06}};
    std::vector<uint64_t> plain, with_cat, with_cat_again, with_dog;
    extend_block_hashes(plain, tokens, kBlockSize);
    extend_block_hashes(with_cat, tokens, kBlockSize, 0, &cat);
    extend_block_hashes(with_cat_again, tokens, kBlockSize, 0, &cat);
    extend_block_hashes(with_dog, tokens, kBlockSize, 0, &dog);
    check(with_cat == with_cat_again, "the same image names the same blocks");
    check(with_cat[0] != with_dog[0] && with_cat[2] != with_dog[2] && with_cat[3] != with_dog[3],
          "different images name different blocks from the first they overlap on (and the chain after)");
    check(with_cat[0] != plain[0], "an image's blocks differ from the same tokens without it");

    // Through the prefix cache: a repeated image adopts the cached blocks, another image adopts none of them.
    KVCacheManager kv = make_kv(32, true);
    Scheduler scheduler(SchedulingPolicy::FCFS, 8, 64, kv);
    auto first = fake_request(tokens, 0);
    first->encoder_inputs = cat;
    scheduler.add(first.get());
    complete_step(scheduler, scheduler.schedule());
    scheduler.remove(first.get());
    auto same = fake_request(tokens, 1), other = fake_request(tokens, 2);
    same->encoder_inputs = cat;
    other->encoder_inputs = dog;
    scheduler.add(same.get());
    scheduler.add(other.get());
    scheduler.schedule();
    check(same->num_cached_prompt_tokens == 12, "the repeated image reuses its blocks (all but the last token's)");
    check(other->num_cached_prompt_tokens == 0, "another image behind the same tokens shares no block (block 0 holds it)");
}

void test_encoder_cache_lru() {
    EncoderCache cache(10);
    auto rows = [](size_t n) { return std::make_shared<const std::vector<float>>(n, 1.0f); };
    cache.insert(1, rows(4));
    cache.insert(2, rows(4));
    check(cache.find(1) != nullptr, "hit");  // 1 becomes the most recent
    cache.insert(3, rows(4));                // 12 > 10: evicts 2, the least recent
    check(cache.find(2) == nullptr && cache.find(1) && cache.find(3), "the least recently used goes first");
    cache.insert(4, rows(11));
    check(cache.find(4) == nullptr && cache.size_floats() == 8, "an entry larger than the cache is not kept");
}

void test_image_checks() {
    std::vector<uint8_t> pixels(2 * 3 * 3, 7);
    auto refused = [](const RgbImageView& v, const std::string& needle) {
        try {
            check_rgb_image(v, "image 2");
        } catch (const Error& e) {
            const std::string m = e.what();
            return e.status() == VLLM_ERR_INVALID_ARGUMENT && m.find("image 2") != std::string::npos &&
                   m.find(needle) != std::string::npos;
        }
        return false;
    };
    check(refused({0, 3, pixels.data(), 0}, "no pixels"), "a 0-pixel side is refused, naming the image");
    check(refused({100000, 2, pixels.data(), pixels.size()}, "larger than"), "a 100,000-pixel side is refused");
    check(refused({2, 3, pixels.data(), 17}, "bytes of pixel data"), "a short buffer is refused");
    check(refused({2, 3, nullptr, 18}, "no pixel data"), "a null buffer is refused");
    RgbImage copy = RgbImage::copy_of({2, 3, pixels.data(), pixels.size()}, "image 1");
    check(copy.rgb == pixels, "a view is copied");
    std::vector<uint8_t> other = pixels;
    other[17] = 8;
    check(image_content_hash(copy.view()) != image_content_hash({2, 3, other.data(), other.size()}),
          "one byte changes the content hash");
    check(image_content_hash({2, 3, pixels.data(), 18}) != image_content_hash({3, 2, pixels.data(), 18}),
          "the shape is part of the hash");
}

// A tower that only lays out prompts (no pixels are ever encoded here).
class LayoutOnlyTower : public VisionTower {
public:
    const std::string& name() const override { return name_; }
    int output_dim() const override { return 4; }
    const ImagePromptFormat& prompt_format() const override { return format_; }
    std::string expand_marker(const ImagePlan& plan) const override {
        std::string s = "[";
        for (int i = 0; i < plan.num_tokens; ++i) s += "<soft>";
        return s + "]";
    }
    ImagePlan plan(const RgbImageView&, const std::string&) const override { return ImagePlan{3, {1, 1, 3}, 1, 3}; }
    PixelValues preprocess(const RgbImageView&, const std::string& what) const override {
        throw_invalid_argument(what + ": layout-only tower");
    }
    void encode(const PixelValues&, ThreadPool&, float*) override {}

private:
    std::string name_ = "layout";
    ImagePromptFormat format_{"<img>", "<soft>"};
};

void test_prompt_layout() {
    LayoutOnlyTower tower;
    std::vector<ImageInput> two(2);
    two[0].plan.num_tokens = 3;
    two[1].plan.num_tokens = 2;
    check(expand_image_markers("a<img>b<img>c", tower, two) == "a[<soft><soft><soft>]b[<soft><soft>]c",
          "each marker becomes its image's expansion, in order");
    auto refusal = [&](auto&& call, const std::string& needle) {
        try {
            call();
        } catch (const Error& e) {
            return std::string(e.what()).find(needle) != std::string::npos;
        }
        return false;
    };
    check(refusal([&] { expand_image_markers("a<img>b", tower, two); }, "1 image marker"), "too few markers refused");
    check(refusal([&] { expand_image_markers("<img><img><img>", tower, two); }, "more image markers"),
          "too many markers refused");
    const std::vector<int32_t> ids = {5, kPlaceholder, kPlaceholder, kPlaceholder, 6, kPlaceholder, kPlaceholder, 7};
    const std::vector<EncoderSpan> spans = image_spans(ids, kPlaceholder, two);
    check(spans.size() == 2 && spans[0].offset == 1 && spans[0].length == 3 && spans[1].offset == 5 &&
              spans[1].length == 2,
          "placeholder runs found in order");
    check(refusal([&] { image_spans({kPlaceholder, 5, kPlaceholder}, kPlaceholder, two); }, "takes 3 placeholder"),
          "a run of the wrong length is refused");
}

}  // namespace

int main() {
    test_encoder_budget_cuts_chunks();
    test_block_hashes_carry_images();
    test_encoder_cache_lru();
    test_image_checks();
    test_prompt_layout();
    return report();
}
