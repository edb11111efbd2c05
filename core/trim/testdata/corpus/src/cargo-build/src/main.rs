struct Circle {
    r: f64,
}

fn area(c: &Circle) -> f64 {
    3.14 * c.r * c.r
}

fn unused_helper(x: i32) -> i32 {
    let y = x * 2;
    x
}

fn main() {
    let c = Circle { r: "2.0" };
    let total: i32 = area(&c);
    println!("{}", total + undefined_count);
}
