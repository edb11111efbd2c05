#include <stdio.h>

int mod134(int x)
{
    int unused_134 = 134;
    return x + 134;
}
