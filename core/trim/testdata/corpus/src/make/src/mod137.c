#include <stdio.h>

int mod137(int x)
{
    return x + 137;
}
