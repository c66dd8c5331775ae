// The training and evaluation corpus: templated bilingual task items, deterministic per seed,
// with a held-out tenth chosen by a hash of the prompt.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <array>
#include <string>
#include <vector>

#include "core/rng.h"
#include "edgellm/train.h"

namespace edgellm {
namespace {

using Rng = SplitMix64;

uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool is_test(const std::string& task, const std::string& prompt) {
  return fnv(task + "\x1f" + prompt) % 10 == 0;
}

struct Pair {
  std::string en, zh;
};

const std::vector<Pair> kCities = {
    {"Beijing", "北京"},   {"Shanghai", "上海"},  {"Shenzhen", "深圳"}, {"Hangzhou", "杭州"},
    {"Chengdu", "成都"},   {"Wuhan", "武汉"},     {"Xian", "西安"},     {"Nanjing", "南京"},
    {"Guangzhou", "广州"}, {"Tianjin", "天津"},   {"Suzhou", "苏州"},   {"Chongqing", "重庆"},
    {"London", "伦敦"},    {"Paris", "巴黎"},     {"Tokyo", "东京"},    {"Berlin", "柏林"}};
const std::vector<Pair> kDays = {{"today", "今天"},        {"tomorrow", "明天"},
                                 {"on Monday", "周一"},     {"on Friday", "周五"},
                                 {"this weekend", "周末"}};
const std::vector<Pair> kNames = {{"Li Lei", "李雷"},   {"Han Meimei", "韩梅梅"}, {"Wang Fang", "王芳"},
                                  {"Zhang Wei", "张伟"}, {"Chen Jing", "陈静"},   {"Liu Yang", "刘洋"},
                                  {"Anna", "安娜"},      {"Tom", "汤姆"}};
const std::vector<Pair> kGenres = {{"jazz", "爵士"}, {"rock", "摇滚"}, {"classical", "古典"},
                                   {"pop", "流行"},  {"folk", "民谣"}};
const std::vector<Pair> kPlaces = {{"the airport", "机场"},  {"the train station", "火车站"},
                                   {"the hospital", "医院"}, {"the museum", "博物馆"},
                                   {"the office", "公司"},   {"the park", "公园"}};
const std::vector<Pair> kItems = {{"apples", "苹果"}, {"books", "书"},  {"tickets", "票"},
                                  {"cups", "杯子"},   {"pens", "笔"},   {"shirts", "衬衫"}};

std::string num(int n) { return std::to_string(n); }

TaskItem intent(Rng& r) {
  const bool zh = r.below(2) == 0;
  const Pair& city = r.pick(kCities);
  const Pair& day = r.pick(kDays);
  const Pair& name = r.pick(kNames);
  const Pair& genre = r.pick(kGenres);
  const Pair& place = r.pick(kPlaces);
  const int h = 5 + r.below(7), m = 1 + r.below(59);
  const int kind = r.below(6);
  const int t = r.below(2);
  std::string u, label;
  switch (kind) {
    case 0:
      label = "weather";
      u = zh ? (t ? day.zh + city.zh + "天气怎么样" : day.zh + city.zh + "会下雨吗")
             : (t ? "what is the weather in " + city.en + " " + day.en
                  : "will it rain in " + city.en + " " + day.en);
      break;
    case 1:
      label = "alarm";
      u = zh ? (t ? "定一个" + num(h) + "点的闹钟" : "明早" + num(h) + "点叫醒我")
             : (t ? "set an alarm for " + num(h) + " am" : "wake me up at " + num(h) + " tomorrow");
      break;
    case 2:
      label = "music";
      u = zh ? (t ? "播放一首" + genre.zh + "歌曲" : "来点" + genre.zh + "音乐")
             : (t ? "play some " + genre.en + " music" : "put on a " + genre.en + " song");
      break;
    case 3:
      label = "navigate";
      u = zh ? (t ? "导航到" + place.zh : "去" + place.zh + "怎么走")
             : (t ? "navigate to " + place.en : "how do I get to " + place.en);
      break;
    case 4:
      label = "call";
      u = zh ? (t ? "给" + name.zh + "打电话" : "呼叫" + name.zh)
             : (t ? "call " + name.en : "phone " + name.en + " now");
      break;
    default:
      label = "timer";
      u = zh ? (t ? "计时" + num(m) + "分钟" : "设置" + num(m) + "分钟倒计时")
             : (t ? "start a timer for " + num(m) + " minutes" : "count down " + num(m) + " minutes");
      break;
  }
  return {"intent", (zh ? "意图：" : "intent: ") + u, label};
}

TaskItem extract(Rng& r) {
  const bool zh = r.below(2) == 0;
  const Pair& city = r.pick(kCities);
  const Pair& day = r.pick(kDays);
  const Pair& name = r.pick(kNames);
  const Pair& item = r.pick(kItems);
  const int h = 7 + r.below(12), mm = r.below(4) * 15, n = 2 + r.below(8);
  const std::string hm = num(h) + ":" + (mm < 10 ? "0" : "") + num(mm);
  switch (r.below(4)) {
    case 0:
      return zh ? TaskItem{"extract", "提取城市：" + name.zh + day.zh + "要去" + city.zh + "出差。", city.zh}
                : TaskItem{"extract", "city: " + name.en + " flies to " + city.en + " " + day.en + ".",
                           city.en};
    case 1:
      return zh ? TaskItem{"extract", "提取时间：会议" + day.zh + hm + "开始。", hm}
                : TaskItem{"extract", "time: the meeting starts at " + hm + " " + day.en + ".", hm};
    case 2:
      return zh ? TaskItem{"extract", "提取人名：" + day.zh + "是" + name.zh + "负责值班。", name.zh}
                : TaskItem{"extract", "name: " + day.en + " " + name.en + " is on duty.", name.en};
    default:
      return zh ? TaskItem{"extract", "摘要：" + name.zh + "在" + city.zh + "买了" + num(n) + "个" + item.zh + "。",
                           name.zh + "买了" + item.zh}
                : TaskItem{"extract",
                           "summary: " + name.en + " bought " + num(n) + " " + item.en + " in " + city.en + ".",
                           name.en + " bought " + item.en};
  }
}

// Arithmetic answers are worked column by column, units first, each step one single-digit
// fact plus the carry or borrow of the step before, then the result after ';':
// 87+99= -> 7+9=16,8+9+1=18;186   87-19= -> 17-9=8,8-1-1=6;68   3*4= -> 3*4=12;12
// Writing 186 at once needs the carry out of the units before any digit is written; each
// worked step needs one fact and what was just written. Eval scores the whole answer, steps
// included.
std::string add_steps(int a, int b) {
  const int u = a % 10 + b % 10, carry = u / 10, t = a / 10 + b / 10 + carry;
  return num(a % 10) + "+" + num(b % 10) + "=" + num(u) + "," + num(a / 10) + "+" + num(b / 10) +
         (carry ? "+1" : "") + "=" + num(t) + ";" + num(a + b);
}

std::string sub_steps(int a, int b) {  // a >= b
  const int borrow = a % 10 < b % 10 ? 1 : 0, u = a % 10 + 10 * borrow - b % 10;
  const int t = a / 10 - b / 10 - borrow;
  return num(a % 10 + 10 * borrow) + "-" + num(b % 10) + "=" + num(u) + "," + num(a / 10) + "-" +
         num(b / 10) + (borrow ? "-1" : "") + "=" + num(t) + ";" + num(a - b);
}

TaskItem math(Rng& r) {
  const bool zh = r.below(3) == 0;
  const int kind = r.below(3);
  int a = r.below(100), b = r.below(100);
  std::string op, v;
  if (kind == 0) {
    op = zh ? "加" : "+";
    v = add_steps(a, b);
  } else if (kind == 1) {
    if (b > a) std::swap(a, b);
    op = zh ? "减" : "-";
    v = sub_steps(a, b);
  } else {
    a = 2 + r.below(8);
    b = 2 + r.below(10);
    op = zh ? "乘" : "*";
    v = num(a) + "*" + num(b) + "=" + num(a * b) + ";" + num(a * b);
  }
  return {"math", zh ? num(a) + op + num(b) + "等于多少？" : num(a) + op + num(b) + "=", v};
}

TaskItem code(Rng& r) {
  const int a = 1 + r.below(9), b = 1 + r.below(9), c = 1 + r.below(9);
  switch (r.below(3)) {
    case 0:
      return {"code", "eval: " + num(a) + "+" + num(b) + "*" + num(c), num(a + b * c)};
    case 1:
      return {"code", "x=" + num(a) + "; x=x+" + num(b) + "; print(x)", num(a + b)};
    default: {
      const int n = 1 + r.below(7);
      std::string list;
      for (int i = 0; i < n; ++i) list += (i ? "," : "") + num(r.below(10));
      return {"code", "len([" + list + "])", num(n)};
    }
  }
}

// Input-grounded copying, outside the default corpus (train with --mix ...,rewrite=1,record=1):
// answers that copy long spans of the prompt, as rewriting and extraction do, for measuring
// n-gram lookup and jump-forward on a model that copies (docs/speculative.md).
std::string clock_time(int h, int mm) { return num(h) + ":" + (mm < 10 ? "0" : "") + num(mm); }

std::string sentence(Rng& r, const Pair& name, bool zh) {
  const Pair& city = r.pick(kCities);
  const Pair& day = r.pick(kDays);
  const Pair& item = r.pick(kItems);
  const Pair& place = r.pick(kPlaces);
  const Pair& genre = r.pick(kGenres);
  const int n = 2 + r.below(8), h = 7 + r.below(12), mm = r.below(4) * 15;
  const std::string hm = clock_time(h, mm);
  switch (r.below(5)) {
    case 0:
      return zh ? name.zh + day.zh + "要去" + city.zh + "出差。" : name.en + " flies to " + city.en + " " + day.en + ".";
    case 1:
      return zh ? name.zh + "在" + city.zh + "买了" + num(n) + "个" + item.zh + "。"
                : name.en + " bought " + num(n) + " " + item.en + " in " + city.en + ".";
    case 2:
      return zh ? "和" + name.zh + "的会议" + day.zh + hm + "开始。"
                : "The meeting with " + name.en + " starts at " + hm + " " + day.en + ".";
    case 3:
      return zh ? name.zh + "打车去" + place.zh + "。" : name.en + " takes a taxi to " + place.en + ".";
    default:
      return zh ? name.zh + "喜欢" + genre.zh + "音乐。" : name.en + " likes " + genre.en + " music.";
  }
}

TaskItem rewrite(Rng& r) {
  const bool zh = r.below(2) == 0;
  const Pair& from = r.pick(kNames);
  const Pair* to = &r.pick(kNames);
  while (to == &from) to = &r.pick(kNames);
  const int n = 3 + r.below(2);  // 3-4 sentences: prompt and answer fit a 256-token window
  std::string text, out;
  for (int i = 0; i < n; ++i) {
    std::string s = sentence(r, from, zh);
    text += (i && !zh ? " " : "") + s;
    const std::string& a = zh ? from.zh : from.en;
    const std::string& b = zh ? to->zh : to->en;
    for (size_t at = s.find(a); at != std::string::npos; at = s.find(a, at + b.size())) s.replace(at, a.size(), b);
    out += (i && !zh ? " " : "") + s;
  }
  return {"rewrite", zh ? "把" + from.zh + "换成" + to->zh + "：" + text
                        : "replace " + from.en + " with " + to->en + ": " + text,
          out};
}

// Eight fields in a fixed order, answered as JSON without whitespace (the spelling
// JsonWhitespace::kNone forces): {"name":"Chen Jing","city":"Wuhan",...,"count":3,...}.
TaskItem record(Rng& r) {
  const bool zh = r.below(2) == 0;
  const Pair& name = r.pick(kNames);
  const Pair& city = r.pick(kCities);
  const Pair& day = r.pick(kDays);
  const Pair& item = r.pick(kItems);
  const Pair& place = r.pick(kPlaces);
  const Pair& genre = r.pick(kGenres);
  const int n = 1 + r.below(9), h = 7 + r.below(12), mm = r.below(4) * 15;
  const std::string hm = clock_time(h, mm);
  auto v = [&](const Pair& p) { return zh ? p.zh : p.en; };
  const std::string prompt =
      zh ? "记录：姓名" + name.zh + "；城市" + city.zh + "；日期" + day.zh + "；时间" + hm + "；物品" +
               item.zh + "；数量" + num(n) + "；地点" + place.zh + "；音乐" + genre.zh
         : "record: name " + name.en + "; city " + city.en + "; day " + day.en + "; time " + hm +
               "; item " + item.en + "; count " + num(n) + "; place " + place.en + "; genre " + genre.en;
  const std::string answer = "{\"name\":\"" + v(name) + "\",\"city\":\"" + v(city) + "\",\"day\":\"" +
                             v(day) + "\",\"time\":\"" + hm + "\",\"item\":\"" + v(item) +
                             "\",\"count\":" + num(n) + ",\"place\":\"" + v(place) + "\",\"genre\":\"" +
                             v(genre) + "\"}";
  return {"record", prompt, answer};
}

const std::vector<TaskItem>& chat_turns() {
  static const std::vector<TaskItem> kTurns = {
      {"chat", "你好", "你好！我是 edgellm 的端侧小模型，可以识别意图、提取信息和做简单算术。"},
      {"chat", "你是谁？", "我是 edgellm 训练的端侧小模型，在手机上本地运行。"},
      {"chat", "用一句话介绍端侧大模型。", "端侧大模型在手机本地运行，不联网也能用，数据不出设备。"},
      {"chat", "hello", "Hello! I am edgellm's small on-device model. I can detect intents, extract facts and do simple math."},
      {"chat", "who are you?", "I am a small model trained by edgellm. I run locally on your phone."},
      {"chat", "Say it in English.", "An on-device model runs locally, works offline and keeps your data on the device."},
      {"chat", "what can you do?", "I can detect intents, extract cities, times and names, and do simple math."},
      {"chat", "你能做什么？", "我能识别意图，提取城市、时间和人名，还能做简单算术。"},
  };
  return kTurns;
}

}  // namespace

const std::vector<std::string>& corpus_tasks() {
  static const std::vector<std::string> kTasks = {"intent", "extract", "math", "code", "chat"};
  return kTasks;
}

const std::vector<std::string>& copy_tasks() {
  static const std::vector<std::string> kTasks = {"rewrite", "record"};
  return kTasks;
}

Result<std::vector<TaskItem>> make_task_items(const std::string& task, Split split, int32_t n,
                                              uint64_t seed) {
  TaskItem (*gen)(Rng&) = task == "intent"    ? intent
                          : task == "extract" ? extract
                          : task == "math"    ? math
                          : task == "code"    ? code
                          : task == "rewrite" ? rewrite
                          : task == "record"  ? record
                                              : nullptr;
  if (!gen && task != "chat") {
    return Status::InvalidArgument("unknown task '" + task +
                                   "': use intent, extract, math, code, chat, rewrite or record");
  }
  if (n < 0) return Status::InvalidArgument("item count must be >= 0");
  std::vector<TaskItem> out;
  out.reserve(static_cast<size_t>(n));
  Rng r{seed * 0x2545F4914F6CDD1Dull + fnv(task) + (split == Split::kTest ? 77 : 0)};
  // The chat task is a fixed set of turns the model must know, in order and cycled: every
  // turn equally often, no held-out part.
  if (task == "chat") {
    for (int32_t i = 0; i < n; ++i) out.push_back(chat_turns()[static_cast<size_t>(i) % chat_turns().size()]);
    return out;
  }
  for (int64_t tries = 0; static_cast<int32_t>(out.size()) < n && tries < 1000LL * (n + 1); ++tries) {
    TaskItem it = gen(r);
    if (is_test(task, it.prompt) != (split == Split::kTest)) continue;
    out.push_back(std::move(it));
  }
  return out;
}

std::string chat_prompt(const std::string& user) {
  return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
}

std::string chat_example(const TaskItem& item) {
  return chat_prompt(item.prompt) + item.answer + "<|im_end|>\n";
}

}  // namespace edgellm
